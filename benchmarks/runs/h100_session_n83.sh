#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N83 (one H100, nvidia-h100-x1): the reclaimer gathers frees for 50 us by default (timer slack
# 1 us). The README's async rows (run.py, 8 rounds x 3 reps) with the library, the tree before
# issue 19, and the gathering time at 0 (a round at every free: the earlier default), 20 and 100 us;
# then alloc_bench.py with the MLIR alloc_loop (its column RECLAIM_US=0 is the earlier default).
# Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
side_by_side async_gather 330 async,async_prealloc --config before-391bd88:LD_PRELOAD=$B \
  --config r0:MGPU_CACHED_ALLOCATOR_RECLAIM_US=0 --config r20:MGPU_CACHED_ALLOCATOR_RECLAIM_US=20 \
  --config r100:MGPU_CACHED_ALLOCATOR_RECLAIM_US=100
python3 benchmarks/paired.py $O/async_gather.json cached before-391bd88 r0 before-391bd88 \
  r20 before-391bd88 r100 before-391bd88 cached r0 > $O/async_gather_paired.txt 2>&1
cat $O/async_gather_paired.txt
timeout 230 python3 benchmarks/alloc_bench.py --rounds 5 --mlir 2000 > $O/alloc_bench.txt 2>&1
echo "alloc_bench rc=$?" >> $O/alloc_bench.txt
cut -c1-150 $O/alloc_bench.txt | tail -40
