#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N90 (one H100, nvidia-h100-x1): as run N89, with the fence asking each of the library's
# streams first (cuStreamQuery: complete means proven, and no work in flight; an event only on the
# others and the legacy stream), so an idle device is seen as idle (run N89's event query right
# after its record mostly reported "not ready"). Then the allocator's counters of one alloc_loop
# run (LLVM 22, 2000 steps) per configuration.
# Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
CFG=$(bisect_configs) || exit 1
F=$R/.gpu/bisect/fixed50/libmgpu_cached.so
side_by_side async_query 330 async,async_prealloc --config before-391bd88:LD_PRELOAD=$B \
  --config r0:MGPU_CACHED_ALLOCATOR_RECLAIM_US=0 --config fixed50:LD_PRELOAD=$F
python3 benchmarks/paired.py $O/async_query.json cached before-391bd88 r0 before-391bd88 \
  fixed50 before-391bd88 > $O/async_query_paired.txt 2>&1
cat $O/async_query_paired.txt
alloc_loop_rounds 7 "19 22" cached::MGPU_CACHED_ALLOCATOR_RECLAIM_US=50 \
  r0::MGPU_CACHED_ALLOCATOR_RECLAIM_US=0 fixed50:$F:MGPU_CACHED_ALLOCATOR_RECLAIM_US=50 \
  before:$B:MGPU_CACHED_ALLOCATOR_RECLAIM_US=0
cat $O/alloc_loop.md
for c in cached:: r0::MGPU_CACHED_ALLOCATOR_RECLAIM_US=0; do
  n=${c%%:*}; rest=${c#*:}; pre=${rest%%:*}; e=${rest#*:}
  env LD_PRELOAD=$pre $e MGPU_CACHED_STATS_FILE=/tmp/st.json /tmp/al22 2000
  python3 -c "import json,sys; s=json.load(open('/tmp/st.json'))['stats']; print(sys.argv[1], {k: v for k, v in s.items() if k.startswith('alloc_') and v})" $n
done > $O/alloc_loop_stats.txt 2>&1
cat $O/alloc_loop_stats.txt
