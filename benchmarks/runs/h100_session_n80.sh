#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N80 (one H100, nvidia-h100-x1): the review's mend of this session's C code (same behaviour:
# one word for the default device's state, one for the graph switch, the slot address in one
# place): every GPU test with the graph path on and off, review 2's gpu_exp.c (G1-G12), PyTorch in
# the same process. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/neighbour_checks.sh
. benchmarks/runs/tree_checks.sh
gpu_tests_on_off 150
cat $O/pytest-gpu.log
review2_and_torch
grep -E "^G[0-9]+" $O/gpu_exp.txt | cut -c1-100; grep -E "SUMMARY" $O/torch_neighbour.txt
