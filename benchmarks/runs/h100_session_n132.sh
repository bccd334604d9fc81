#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N132 (one H100, nvidia-h100-x1): the late-night session's review mend (chain.c's segment
# beginning and fit check in one helper each, the sparse flush through report_sparse; the same
# behaviour) on the GPU: every GPU test with the graph path on and off. Carry `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
gpu_tests_on_off 150
cat $O/pytest-gpu.log
