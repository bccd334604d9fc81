#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N61 (one H100, nvidia-h100-x1): the stop's final C code: where the thread throughput's loss
# from 4 threads lies (issue 21 item 1): the library as shipped, the library in threads that made
# the primary context current (no per-launch push / pop), stock behaviour and the driver's own
# push / pop loop, 11 reps. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
timeout 240 python3 benchmarks/conc/throughput.py --launches 20000 --reps 11 --diagnose \
  --only "cached,cached ctx current,stock,driver ctx push/pop" > $O/throughput_diagnose.txt 2>&1
echo "rc=$?" >> $O/throughput_diagnose.txt; tail -8 $O/throughput_diagnose.txt
