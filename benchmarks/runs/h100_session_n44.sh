#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N44 (one H100, nvidia-h100-x1): every program of the README's table (empty, stencil, large,
# the allocating async step, the step with buffers made once; LLVM 19 and 22), 8 rounds, this
# session's C code beside the tree before issue 19 and this session's starting tree (e243408), both
# preloaded: the single-thread rows after the graph gate's change. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
ROUNDS=8 side_by_side readme_rows 420 empty,stencil,large,async,async_prealloc \
  --config before-391bd88:LD_PRELOAD=$B --config start-e243408:LD_PRELOAD=$S
