#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N111 (one H100, nvidia-h100-x1): issue 21 items 2 and 3 on this session's code. Carry `.gpu`
# (start-src: the session's starting tree, b704321) and `.whl`.
#  a) The synchronous pairs (sync_pair_probe, plain, 256 B - 1 MiB): this library, the starting
#     tree (preloaded) and stock behaviour, interleaved, 21 rounds; per-round ratios
#     (benchmarks/medians.py --ratio). The allocator's unlocked look at a class's bins (may_take)
#     is the change.
#  b) Where a chain's time goes (benchmarks/chain_split_probe.c): the launches part and the
#     synchronisation part apart, K = 10 and 100, the LLVM 22 shape, the LLVM <= 20 shape with the
#     blob in the executable and on the heap, the LLVM 22 shape with two cuCtxGetId per chain, and
#     the hand-made graph; chain replay on; 15 rounds interleaved.
#  c) Every GPU test once on this code.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
LDF=$(python3 -m mgpu_cached --ldflags)
cc -O2 -o /tmp/spp benchmarks/sync_pair_probe.c $LDF || exit 1
# a) pairs
for hs in 1 0; do
  for r in $(seq 21); do
    for c in cached: start:LD_PRELOAD=$S stock:MGPU_CACHED_DISABLE=1; do
      n=${c%%:*}; v=${c#*:}
      env $v /tmp/spp $hs 300 256 4096 65536 1048576 plain | while read b us; do echo "$r $b $n $us"; done
    done
  done > $O/pairs_hs$hs.raw
  { echo "host_shared=$hs: cached / stock"; python3 benchmarks/medians.py $O/pairs_hs$hs.raw us --ratio cached stock
    echo "host_shared=$hs: start / stock"; python3 benchmarks/medians.py $O/pairs_hs$hs.raw us --ratio start stock
    echo "host_shared=$hs: cached / start"; python3 benchmarks/medians.py $O/pairs_hs$hs.raw us --ratio cached start
  } > $O/pairs_hs$hs.md 2>&1
  cat $O/pairs_hs$hs.md
done
# b) chain split
chain_split_build || exit 1
for r in $(seq 15); do
  for k in 10 100; do
    for m in mgpu mgpu19exe mgpu19 mgpuid cu_graphK; do
      MGPU_CACHED_GRAPH=1 MGPU_CACHED_CHAIN=1 MGPU_CACHED_STREAM_HANDLES=tagged \
        timeout 60 /tmp/csp /tmp/empty.fatbin $m $k 2000 | sed "s/^/$r /"
    done
  done
done > $O/chain_split.raw
python3 - "$O/chain_split.raw" > $O/chain_split.md <<'EOF'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    r, js = line.split(" ", 1)
    d = json.loads(js)
    rows.setdefault((d["k"], d["mode"]), []).append(d)
print("| K | mode | rounds | launches µs | sync µs | total µs | launches mean | sync mean |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for (k, m), v in sorted(rows.items()):
    med = lambda f: statistics.median(x[f] for x in v)
    print(f"| {k} | {m} | {len(v)} | {med('launch_us'):.2f} | {med('sync_us'):.2f} | {med('total_us'):.2f} "
          f"| {med('launch_mean_us'):.2f} | {med('sync_mean_us'):.2f} |")
EOF
cat $O/chain_split.md
# c) GPU tests
gpu_tests 240
