#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N45 (one H100, nvidia-h100-x1): the final C code of this session (the look-up entry
# remembering 4 kernels per module): every program of the README's table, LLVM 19 and 22, 16
# rounds (48 samples per cell), beside the tree before issue 19 and this session's starting tree
# (e243408), both preloaded; then the GPU tests and 300 differential-tester programs of the
# threads and capture classes (two threads now take the graph path side by side). Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
. benchmarks/runs/neighbour_checks.sh
ROUNDS=16 side_by_side readme_rows 480 empty,stencil,large,async,async_prealloc \
  --config before-391bd88:LD_PRELOAD=$B --config start-e243408:LD_PRELOAD=$S
gpu_tests 100
difftest classes 120 --profile stock --classes threads,capture --programs 300 --seed 97
grep -h '"differences"' $O/difftest_classes.txt | cut -c1-200; tail -2 $O/difftest_classes.txt
