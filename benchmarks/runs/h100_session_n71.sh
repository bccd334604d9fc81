#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N71 (one H100, nvidia-h100-x1): the review's mend (532af0d, same behaviour): every GPU test
# with the graph path on and off, review 2's gpu_exp.c (G1-G12), PyTorch in the same process, and
# the thread throughput (5 reps). Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
. benchmarks/runs/neighbour_checks.sh
gpu_tests_on_off 150
cat $O/pytest-gpu.log
review2_and_torch
grep -E "^G[0-9]+" $O/gpu_exp.txt | cut -c1-100; grep -E "SUMMARY" $O/torch_neighbour.txt
timeout 150 python3 benchmarks/conc/throughput.py --launches 20000 --reps 5 \
  --only "cached,cached llvm19-load,stock" > $O/throughput_n71.txt 2>&1
echo "rc=$?" >> $O/throughput_n71.txt; tail -8 $O/throughput_n71.txt
