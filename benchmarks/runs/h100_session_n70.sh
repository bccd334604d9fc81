#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N70 (one H100, nvidia-h100-x1): the stop's final C code (inline hot-path look-ups, fewer
# thread-local look-ups): every GPU test with the graph path on and off, review 2's gpu_exp.c
# (G1-G12), PyTorch in the same process, and the thread throughput beside the session's starting
# tree 6f88077 (7 reps). Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
. benchmarks/runs/neighbour_checks.sh
gpu_tests_on_off 150
cat $O/pytest-gpu.log
review2_and_torch
neighbour_summary | cut -c1-120
timeout 200 python3 benchmarks/conc/throughput.py --launches 20000 --reps 7 --before $S \
  --only "cached,cached llvm19-load,before,before llvm19-load" > $O/throughput_n70.txt 2>&1
echo "rc=$?" >> $O/throughput_n70.txt; tail -8 $O/throughput_n70.txt
