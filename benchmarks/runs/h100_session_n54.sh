#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N54 (one H100, nvidia-h100-x1): the C code after the review of the change (graph launches and
# chain submissions bracket with capture.h's nestable relaxed mode): every GPU test; review 2's
# gpu_exp.c (G1-G12) and PyTorch in the same process; 300 differential-tester programs of the
# capture and threads classes. Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
. benchmarks/runs/neighbour_checks.sh
gpu_tests 120
review2_and_torch
difftest threads_capture 150 --profile stock --classes threads,capture --programs 300 --seed 109
neighbour_summary
