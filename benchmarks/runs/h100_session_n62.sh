#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N62 (one H100, nvidia-h100-x1): bare launches (MGPU_CACHED_BARE_LAUNCH=1, issue 21's threads):
# the thread throughput of the library with and without them beside the driver's loop with the
# context pushed and popped around each launch and the driver's loop with no context current
# (11 reps); every GPU test with bare launches on and the graph path off (every launch on a
# library stream goes bare there). Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
timeout 330 python3 benchmarks/conc/throughput.py --launches 20000 --reps 11 --diagnose \
  --only "cached,cached bare,cached llvm19-load,cached llvm19-load bare,stock,driver ctx push/pop,driver no context" \
  > $O/throughput_bare.txt 2>&1
echo "rc=$?" >> $O/throughput_bare.txt; tail -12 $O/throughput_bare.txt
MGPU_CACHED_BARE_LAUNCH=1 MGPU_CACHED_GRAPH=0 timeout 200 python3 -m pytest -q -rf tests/gpu/ > $O/pytest-gpu-bare.log 2>&1
echo "rc=$?" >> $O/pytest-gpu-bare.log; tail -4 $O/pytest-gpu-bare.log
