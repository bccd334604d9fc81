#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N116 (one H100, nvidia-h100-x1): this session's final C code (the allocator's unlocked look
# at a class's bins; the module cache's shorter thread-cache paths). PART=A: every GPU test with
# the graph path on and off, review 2's gpu_exp.c (G1-G12) and PyTorch in the same process, and the
# differential tester's threads/capture and module-globals/pressure classes (1,000 programs each,
# stock profile). PART=B: the README's rows (8 rounds) beside the session's starting tree
# (b704321, .gpu/start-src) and the tree before issue 19 (391bd88, .gpu/base-src), per-round
# ratios. Carry `.gpu` and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
. benchmarks/runs/neighbour_checks.sh
if [ "${PART:-A}" = A ]; then
  final_code_checks
  difftest_two_classes 1161
else
  ROUNDS=8 side_by_side rows_n116 520 empty,stencil,large,async,async_prealloc \
    --config start-b704321:LD_PRELOAD=$S --config before-391bd88:LD_PRELOAD=$B
  python3 benchmarks/paired.py $O/rows_n116.json cached start-b704321 cached before-391bd88 \
    > $O/rows_n116_paired.txt 2>&1; cat $O/rows_n116_paired.txt
fi
