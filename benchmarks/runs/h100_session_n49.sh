#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N49 (one H100, nvidia-h100-x1): the stop's final C code: every GPU test; review 2's
# gpu_exp.c (G1-G12) and PyTorch in the same process; the differential tester's module-globals,
# threads and capture classes (300 programs each). Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
. benchmarks/runs/neighbour_checks.sh
gpu_tests 120
review2_and_torch
difftest globals 120 --profile stock --classes modglobal --programs 300 --seed 103
difftest threads_capture 150 --profile stock --classes threads,capture --programs 300 --seed 107
neighbour_summary
