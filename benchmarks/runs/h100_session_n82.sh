#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N82 (one H100, nvidia-h100-x1): issue 19's 3% rule for the allocating async step. Run N81's
# per-entry-point times put the step's extra time in mgpuStreamSynchronize (waiting for the GPU),
# gone with clearing off: so the README's async rows (run.py, 8 rounds x 3 reps) with the library,
# the tree before issue 19, clearing off, and the reclaimer gathering frees for 10 / 40 us before
# each round (MGPU_CACHED_ALLOCATOR_RECLAIM_US: fewer rounds, the memsets batched).
# Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
side_by_side async_reclaim 520 async,async_prealloc --config before-391bd88:LD_PRELOAD=$B \
  --config nozero:MGPU_CACHED_ALLOCATOR_ZERO=0 --config r10:MGPU_CACHED_ALLOCATOR_RECLAIM_US=10 \
  --config r40:MGPU_CACHED_ALLOCATOR_RECLAIM_US=40
python3 benchmarks/paired.py $O/async_reclaim.json cached before-391bd88 nozero before-391bd88 \
  r10 before-391bd88 r40 before-391bd88 > $O/async_reclaim_paired.txt 2>&1
cat $O/async_reclaim_paired.txt
