#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N131 (one H100, nvidia-h100-x1): issue 21 item 1, what host work beside the driver's costs at
# 4 threads. Thread throughput (benchmarks/conc/throughput.py --diagnose) at 4 threads, 31 reps
# interleaved: the driver loop, the library's three shapes, the bound (the driver with no context
# current and the library's two checks) and the bound with 100 and 300 ns of host work spun per
# launch (LT_SPIN_NS). Carry `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
M="cached,cached llvm19-load,cached llvm19-load exe,driver no context + checks"
M="$M,driver no context + checks + 100 ns,driver no context + checks + 300 ns"
timeout 400 python3 benchmarks/conc/throughput.py --launches 20000 --reps 31 --diagnose --threads 4 \
  --only "$M" > $O/threads_n131.txt 2>&1; echo "rc=$?" >> $O/threads_n131.txt
cut -c1-300 $O/threads_n131.txt | tail -6
