#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N26 (one H100, nvidia-h100-x1): every GPU test with the graph path on and off on the stop's
# final commit (after the review of the change: device work counted where it begins, one stock
# free). Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
gpu_tests_on_off 120
cat $O/pytest-gpu.log
