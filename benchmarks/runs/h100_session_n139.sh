#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N139 (one H100, nvidia-h100-x1): the session's final C code (the launch dimensions read in
# place; mc_blob_same's page loop with the page size read once) on the GPU: every GPU test with
# the graph path on and off; chain_pair_probe.c (K = 10 and 100, 5 processes each, this tree and
# the session's starting tree, .gpu/start-src); launch_path.py at 1 thread beside the starting
# tree (9 rounds); throughput.py --paired at 4 threads beside the starting tree (9 processes per
# shape). Carry `.gpu` and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
gpu_tests_on_off 150
cat $O/pytest-gpu.log
chain_split_build || exit 1
chain_pair_build || exit 1
chain_pair_rounds 5
timeout 120 python3 benchmarks/conc/launch_path.py --rounds 9 --threads 1 \
  --lib start=.gpu/start/libmgpu_cached.so > $O/launch_path_n139.txt 2>&1
echo "rc=$?" >> $O/launch_path_n139.txt
cat $O/launch_path_n139.txt
timeout 200 python3 benchmarks/conc/throughput.py --paired --launches 5000 --reps 9 --threads 4 \
  --before .gpu/start/libmgpu_cached.so > $O/paired_n139.txt 2>&1
echo "rc=$?" >> $O/paired_n139.txt
cat $O/paired_n139.txt
