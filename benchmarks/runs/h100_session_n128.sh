#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N128 (one H100, nvidia-h100-x1, the machine of runs N126-N127): issue 21 item 2, why one
# process records a K = 10 chain in half the time of another on the same host (runs N121, N126:
# the launches part of the LLVM <= 20 shapes 0.95 or 1.8-2.0 µs, blob in the executable, with
# the same host speed). chain_split_probe (now with first_us, cpu_changes and csw) for the
# executable and heap shapes and the hand-made graph, 10 processes each, unpinned and pinned to
# one CPU (taskset -c 6), interleaved. Carry `.gpu` and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
chain_split_build || exit 1
export MGPU_CACHED_GRAPH=1 MGPU_CACHED_CHAIN=1 MGPU_CACHED_STREAM_HANDLES=tagged
for r in $(seq 10); do
  for m in cu_graphK mgpu mgpu19exe mgpu19; do
    echo "$r free $(timeout 60 /tmp/csp /tmp/empty.fatbin $m 10 2000)"
    echo "$r pinned $(timeout 60 taskset -c 6 /tmp/csp /tmp/empty.fatbin $m 10 2000)"
  done
done > $O/pinning.raw
python3 - $O/pinning.raw <<'PY' | tee $O/pinning.txt
import json, sys, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r, how, js = line.split(" ", 2)
    d = json.loads(js)
    rows[(d["mode"], how)].append(d)
print("mode how: per process launch_us / first_us / calib_thr_ns / cpu_changes / csw (vol, invol)")
for key in sorted(rows):
    print(*key, "  ".join(f"{d['launch_us']:.2f}/{d['first_us']:.2f}/{d['calib_thr_ns'][0]:.2f}/"
                          f"{d['cpu_changes']}/{d['csw'][0]},{d['csw'][1]}" for d in rows[key]))
PY
