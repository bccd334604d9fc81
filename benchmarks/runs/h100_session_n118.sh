#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N118 (one H100, nvidia-h100-x1): the review mend (b58eefd: the allocator's key and kind
# computed once, the thread cache's notes on covered devices only) on the GPU: every GPU test with
# the graph path on and off, review 2's gpu_exp.c (G1-G12) and PyTorch in the same process.
# Carry `.gpu` (review2) and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
. benchmarks/runs/neighbour_checks.sh
final_code_checks
