#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N137 (one H100, nvidia-h100-x1): this session's launch path (the launch dimensions converted
# at the ABI edge and read in place) on the GPU: every GPU test with the graph path on and off,
# and launch_path.py at 1 thread (9 rounds) beside the session's starting tree (.gpu/start-src).
# Carry `.gpu` and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
gpu_tests_on_off 150
cat $O/pytest-gpu.log
timeout 120 python3 benchmarks/conc/launch_path.py --rounds 9 --threads 1 \
  --lib start=.gpu/start/libmgpu_cached.so > $O/launch_path_n137.txt 2>&1
echo "rc=$?" >> $O/launch_path_n137.txt
cat $O/launch_path_n137.txt
