#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N60 (one H100, nvidia-h100-x1): the stop's final C code (9a72d33: the context enter's
# thread-locals looked up once, mc_graph_enabled without a pthread_once call): every GPU test,
# review 2's gpu_exp.c (G1-G12) and PyTorch in the same process; the README's synchronous rows
# (8 rounds) beside the tree before issue 19 and this session's starting tree. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
. benchmarks/runs/neighbour_checks.sh
gpu_tests 120
review2_and_torch
neighbour_summary
ROUNDS=8 side_by_side sync_rows 200 empty,stencil,large \
  --config before-391bd88:LD_PRELOAD=$B --config start-fcecbe0:LD_PRELOAD=$S
