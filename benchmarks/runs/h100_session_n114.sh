#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N114 (one H100, nvidia-h100-x1): run N113 found the chain links' host cost on one of two
# levels per process, whatever the core. Whether the level follows the stack's place: with
# address-space randomisation off (setarch -R), an environment variable of 0 to 4080 bytes (steps
# of 16) moves the initial stack by that much; chain_split_probe (K = 100, chain replay on) in the
# LLVM <= 20 shape (blob in the executable) and the LLVM 22 shape at every offset. Carry `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
chain_split_build || exit 1
export MGPU_CACHED_GRAPH=1 MGPU_CACHED_CHAIN=1 MGPU_CACHED_STREAM_HANDLES=tagged
for pad in $(seq 0 16 4080); do
  p=$(head -c $pad /dev/zero | tr '\0' x)
  for m in mgpu19exe mgpu; do
    echo "$pad $(PAD=$p setarch -R timeout 60 /tmp/csp /tmp/empty.fatbin $m 100 1000)"
  done
done > $O/stack_scan.raw
python3 - $O/stack_scan.raw > $O/stack_scan.md <<'PY'
import json, sys, collections, statistics as S
d = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    pad, js = line.split(" ", 1)
    x = json.loads(js)
    d[int(pad)][x["mode"]] = x["launch_us"]
for m in ("mgpu19exe", "mgpu"):
    v = [d[p][m] for p in sorted(d) if m in d[p]]
    lo = min(v)
    high = [p for p in sorted(d) if m in d[p] and d[p][m] > 1.3 * lo]
    print(f"{m}: {len(v)} offsets, launches part min {lo:.2f} median {S.median(v):.2f} max {max(v):.2f} µs; "
          f"{len(high)} offsets above 1.3x the min")
    print("  offsets above: " + " ".join(str(p) for p in high))
print()
print("| env bytes | 19exe µs | 22 µs |")
print("| --- | --- | --- |")
for p in sorted(d):
    print(f"| {p} | {d[p].get('mgpu19exe')} | {d[p].get('mgpu')} |")
PY
head -8 $O/stack_scan.md
