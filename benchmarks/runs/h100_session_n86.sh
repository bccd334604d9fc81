#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N86 (one H100, nvidia-h100-x1): alloc_loop ran 1.4x the tree before issue 19 in run N85 (and
# slower still with the reclaimer gathering frees): its host time per entry point
# (benchmarks/abi_time.py, 2000 and 4000 steps, 5 rounds) with gathering 50 us (the library as it
# is), 0, and the tree before issue 19; then the library's counters of one 2000-step run each.
# Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
timeout 300 python3 benchmarks/abi_time.py --out /tmp/at --programs alloc_loop --llvm 19,22 --n 2000 \
  --rounds 5 --config r0:MGPU_CACHED_ALLOCATOR_RECLAIM_US=0 --config before-391bd88:LD_PRELOAD=$R/.gpu/base/libmgpu_cached.so \
  > $O/abi_time_alloc_loop.log 2>&1
echo "rc=$?" >> $O/abi_time_alloc_loop.log
cp /tmp/at/abi_time.md $O/abi_time_alloc_loop.md; cp /tmp/at/abi_time.json $O/abi_time_alloc_loop.json
cat $O/abi_time_alloc_loop.md; tail -2 $O/abi_time_alloc_loop.log
for c in r50::50 r0::0 before:$R/.gpu/base/libmgpu_cached.so:0; do
  n=${c%%:*}; rest=${c#*:}; pre=${rest%%:*}; us=${rest#*:}
  LD_PRELOAD=$pre MGPU_CACHED_ALLOCATOR_RECLAIM_US=$us MGPU_CACHED_STATS_FILE=/tmp/st.json /tmp/at/build/alloc_loop_llvm22 2000
  python3 -c "import json,sys; s=json.load(open('/tmp/st.json'))['stats']; print(sys.argv[1], {k: v for k, v in s.items() if v})" $n
done > $O/alloc_loop_stats.txt 2>&1
cat $O/alloc_loop_stats.txt
