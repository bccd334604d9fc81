#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N84 (one H100, nvidia-h100-x1): why gathering frees (MGPU_CACHED_ALLOCATOR_RECLAIM_US=50) made
# the MLIR alloc_loop (host_shared alloc, kernel, host read, dealloc per step) slower in run N83:
# alloc_loop (LLVM 19 and 22, 2000 steps, 7 rounds, configurations interleaved) with gathering 0 /
# 50 / 200 us, each with and without clearing (MGPU_CACHED_ALLOCATOR_ZERO=0), and the allocator's
# counters of one more run. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
CONFIGS="r0:0:1 r50:50:1 r200:200:1 r0z0:0:0 r50z0:50:0 r200z0:200:0"
alloc_loop_rounds 7 "19 22" r0::MGPU_CACHED_ALLOCATOR_RECLAIM_US=0 \
  r50::MGPU_CACHED_ALLOCATOR_RECLAIM_US=50 r200::MGPU_CACHED_ALLOCATOR_RECLAIM_US=200 \
  r0z0::MGPU_CACHED_ALLOCATOR_RECLAIM_US=0,MGPU_CACHED_ALLOCATOR_ZERO=0 \
  r50z0::MGPU_CACHED_ALLOCATOR_RECLAIM_US=50,MGPU_CACHED_ALLOCATOR_ZERO=0 \
  r200z0::MGPU_CACHED_ALLOCATOR_RECLAIM_US=200,MGPU_CACHED_ALLOCATOR_ZERO=0
for c in $CONFIGS; do
  n=${c%%:*}; rest=${c#*:}; us=${rest%%:*}; z=${rest#*:}
  MGPU_CACHED_ALLOCATOR_RECLAIM_US=$us MGPU_CACHED_ALLOCATOR_ZERO=$z MGPU_CACHED_STATS_FILE=/tmp/st.json /tmp/al22 2000 > /dev/null
  python3 -c "import json,sys; s=json.load(open('/tmp/st.json')); s=s.get('counters', s); print(sys.argv[1], {k: v for k, v in s.items() if k.startswith('alloc_') and v})" $n
done >> $O/alloc_loop.md 2>&1
cat $O/alloc_loop.md | cut -c1-400
