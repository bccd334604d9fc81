#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N147 (one H100, nvidia-h100-x1): the session's C code (a heap blob's hits compared with
# 512-bit loads, csrc/support/same_bytes.c) beside the session's starting tree (.gpu/start-src):
# every GPU test with the graph path on and off; chain_pair_probe.c with each shape taking each of
# the library's streams in turn (run N146 found the synchronisation differing by stream), K = 10
# and 100, 7 processes each; throughput.py --paired at 4 threads (the heap shape compares at every
# hit), 9 processes per shape. Carry `.gpu` and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
gpu_tests_on_off 150
cat $O/pytest-gpu.log
chain_split_build || exit 1
chain_pair_build || exit 1
chain_pair_rounds 7
timeout 200 python3 benchmarks/conc/throughput.py --paired --launches 5000 --reps 9 --threads 4 \
  --before .gpu/start/libmgpu_cached.so > $O/paired_n147.txt 2>&1
echo "rc=$?" >> $O/paired_n147.txt
tail -25 $O/paired_n147.txt
