#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N46 (one H100, nvidia-h100-x1): run N45 measured the async rows of this session's code 3%
# above the starting tree with wide quartiles; the same rows (the allocating step and the step with
# buffers made once, LLVM 19 and 22), 24 rounds (72 samples per cell), this code beside the
# starting tree (e243408, preloaded) and beside itself with MGPU_CACHED_GRAPH_THREADS=1 (the
# graph gate's rule before). Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
ROUNDS=24 side_by_side async_rows 420 async,async_prealloc \
  --config start-e243408:LD_PRELOAD=$S --config graph-threads-1:MGPU_CACHED_GRAPH_THREADS=1
