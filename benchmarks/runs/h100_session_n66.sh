#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N66 (one H100, nvidia-h100-x1): issue 19's checks on the code with bare launches (583d073):
# every GPU test with the graph path on and off, review 2's gpu_exp.c (G1-G12), PyTorch in the same
# process, the differential tester's threads and capture classes (300 programs). Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
. benchmarks/runs/neighbour_checks.sh
gpu_tests_on_off 150
cat $O/pytest-gpu.log
review2_and_torch
difftest threads_capture 170 --profile stock --classes threads,capture --programs 300 --seed 110
neighbour_summary
