#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N104 (one H100, nvidia-h100-x1): a host_shared block handed out again from the cache and
# freed with the NULL stream with no work between goes back with the stock cuMemFree (the
# working tree) instead of being kept and cleared again (HEAD before that change, .gpu/start-src,
# preloaded as "kept"). benchmarks/sync_pair_probe.c, host_shared, 256 B .. 16 MiB, patterns plain,
# primed (one touched pair first), alternate (every other pair touched), touched; 7 rounds, the
# library, "kept" and stock behaviour interleaved; then alloc_bench.py --pairs with "kept" as
# before (run N101's harness). Carry `.gpu` (start-src), `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
cc -O2 -o /tmp/spp benchmarks/sync_pair_probe.c $(python3 -m mgpu_cached --ldflags) || exit 1
for m in plain primed alternate touched; do
  for r in $(seq 7); do
    for c in cached: kept:LD_PRELOAD=$S stock:MGPU_CACHED_DISABLE=1; do
      n=${c%%:*}; v=${c#*:}
      env $v /tmp/spp 1 400 256 4096 65536 524288 16777216 $m | while read b us; do echo "$r $b $n $us"; done
    done
  done > /tmp/pairs_$m.raw
  python3 benchmarks/medians.py /tmp/pairs_$m.raw us > $O/pairs_$m.md; echo "mode $m"; cat $O/pairs_$m.md
done
cat /tmp/pairs_*.raw > $O/pairs_raw.txt
ALLOC_BENCH_BEFORE_LIB=$S timeout 240 python3 benchmarks/alloc_bench.py --pairs --rounds 7 > $O/alloc_pairs.txt 2>&1
echo "rc=$?" >> $O/alloc_pairs.txt; grep -E "kind|^host_shared|^hs\+touch|rc=" $O/alloc_pairs.txt
