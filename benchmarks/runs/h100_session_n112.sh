#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N112 (one H100, nvidia-h100-x1): this session's allocator change (may_take) against the
# session's starting tree (b704321, .gpu/start-src, preloaded). Carry `.gpu` and `.whl`.
#  a) The README's async rows (the allocating step and the step with buffers made once, LLVM 19
#     and 22), 8 rounds, per-round ratios (benchmarks/paired.py): every miss of the allocating
#     step now skips the locked look-up when its class's bins are empty.
#  b) The synchronous host_shared pair (sync_pair_probe, plain, 256 B and 4 KiB), each process
#     pinned to one core (taskset -c 3): runs N110 and N111 found every process on one of two
#     levels (~15 or ~23 µs); whether one core gives one level. This library, the starting tree
#     and stock behaviour, 21 rounds interleaved, per-round ratios.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
ROUNDS=8 side_by_side async_n112 400 async,async_prealloc --config start-b704321:LD_PRELOAD=$S
python3 benchmarks/paired.py $O/async_n112.json cached start-b704321 > $O/async_n112_paired.txt 2>&1
cat $O/async_n112_paired.txt
cc -O2 -o /tmp/spp benchmarks/sync_pair_probe.c $(python3 -m mgpu_cached --ldflags) || exit 1
for r in $(seq 21); do
  for c in cached: start:LD_PRELOAD=$S stock:MGPU_CACHED_DISABLE=1; do
    n=${c%%:*}; v=${c#*:}
    env $v taskset -c 3 /tmp/spp 1 300 256 4096 plain | while read b us; do echo "$r $b $n $us"; done
  done
done > $O/pairs_pinned.raw
{ for a in "cached stock" "start stock" "cached start"; do
    echo "host_shared, pinned: ${a% *} / ${a#* }"; python3 benchmarks/medians.py $O/pairs_pinned.raw us --ratio $a
  done; } > $O/pairs_pinned.md 2>&1
cat $O/pairs_pinned.md
