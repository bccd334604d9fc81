#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N63 (one H100, nvidia-h100-x1): where the allocating async step's time beside the tree before
# issue 19 goes (issue 19's 3% rule, issue 21 item 3): the README's async rows (the allocating step
# and the step with buffers made once, LLVM 19 and 22, 10 rounds) with the library as committed
# (f695c11), with its headroom checks off (MGPU_CACHED_ALLOCATOR_HEADROOM=0: no cuMemGetInfo), with
# reused blocks not cleared (MGPU_CACHED_ALLOCATOR_ZERO=0), and the tree before issue 19.
# Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
ROUNDS=10 side_by_side async_attr 430 async,async_prealloc \
  --config before-391bd88:LD_PRELOAD=$B --config noheadroom:MGPU_CACHED_ALLOCATOR_HEADROOM=0 \
  --config nozero:MGPU_CACHED_ALLOCATOR_ZERO=0
