#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N102 (one H100, nvidia-h100-x1): run N101's untouched host_shared pair at 256 B (1.48x stock
# inside alloc_pair_bench, 4 KiB 1.05x) with one library per process (benchmarks/sync_pair_probe.c):
# host_shared and device pairs at 256 B .. 512 KiB, 9 rounds, configurations interleaved (the
# library, stock behaviour, clearing off, the tree before issue 19 preloaded); the library's
# counters for the pairs. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
cc -O2 -o /tmp/spp benchmarks/sync_pair_probe.c $(python3 -m mgpu_cached --ldflags) || exit 1
for hs in 1 0; do
  for r in $(seq 9); do
    for c in cached: stock:MGPU_CACHED_DISABLE=1 zero0:MGPU_CACHED_ALLOCATOR_ZERO=0 before:LD_PRELOAD=$B; do
      n=${c%%:*}; v=${c#*:}
      env $v /tmp/spp $hs 400 256 4096 65536 524288 | while read b us; do echo "$r $b $n $us"; done
    done
  done > $O/pairs_hs$hs.raw
  python3 benchmarks/medians.py $O/pairs_hs$hs.raw us > $O/pairs_hs$hs.md; echo "host_shared=$hs"; cat $O/pairs_hs$hs.md
done
MGPU_CACHED_STATS=1 /tmp/spp 1 400 256 > $O/stats_hs256.txt 2>&1
MGPU_CACHED_STATS=1 /tmp/spp 1 400 4096 > $O/stats_hs4096.txt 2>&1
for f in $O/stats_hs256.txt $O/stats_hs4096.txt; do echo "$f"; awk 'NF==2 && $2!=0' $f | grep -v "^ *[0-9]* [0-9.]*$" | head -20; head -1 $f; done
