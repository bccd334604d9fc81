#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N125 (one H100, nvidia-h100-x1): the review mend (chain.c's history reset in one function;
# the GPU chain tests' shared saxpy chains) on the GPU: every GPU test with the graph path on and
# off. Carry `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
gpu_tests_on_off 200; cat $O/pytest-gpu.log
