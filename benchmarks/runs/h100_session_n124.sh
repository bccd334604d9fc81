#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N124 (one H100, nvidia-h100-x1, the machine of run N123): issue 21 item 1 in full. Thread
# throughput (benchmarks/conc/throughput.py --diagnose) at 1, 2, 4, 8 and 16 threads, 15 reps
# interleaved: the driver loop, the library in the LLVM >= 21 shape and the load-per-launch shape
# (blob on the heap and in the executable), and the driver's own loop with no context current
# plus the library's two checks. Carry `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
M="cached,cached llvm19-load,cached llvm19-load exe,driver no context + checks"
timeout 540 python3 benchmarks/conc/throughput.py --launches 20000 --reps 15 --diagnose --threads 1,2,4,8,16 \
  --only "$M" > $O/threads_n124.txt 2>&1; echo "rc=$?" >> $O/threads_n124.txt
cut -c1-250 $O/threads_n124.txt
