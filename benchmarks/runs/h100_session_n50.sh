#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N50 (one H100, nvidia-h100-x1): the stop's final C code: every program of the README's table,
# LLVM 19 and 22, 16 rounds (48 samples per cell), beside the tree before issue 19 and this
# session's starting tree (e243408), both preloaded. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
ROUNDS=16 side_by_side readme_rows 480 empty,stencil,large,async,async_prealloc \
  --config before-391bd88:LD_PRELOAD=$B --config start-e243408:LD_PRELOAD=$S
