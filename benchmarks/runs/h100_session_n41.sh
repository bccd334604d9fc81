#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N41 (one H100, nvidia-h100-x1): every GPU test on the stop's final C code (after the review
# that folded the synchronisation's poll into drain_poll_locked), and review 2's gpu_exp.c with
# PyTorch in the same process. Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
. benchmarks/runs/neighbour_checks.sh
gpu_tests 120
review2_and_torch
neighbour_summary
