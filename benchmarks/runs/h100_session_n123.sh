#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N123 (one H100, nvidia-h100-x1): issue 21 item 1, where the 4- and 8-thread loss lies. Thread
# throughput (benchmarks/conc/throughput.py --diagnose), 4 and 8 threads, 31 reps interleaved: the
# driver loop, the library in the LLVM >= 21 shape with the graph path on (default) and off
# (MGPU_CACHED_GRAPH=0: no launcher word, no graph exec), the driver's own loop with no context
# current plus the library's two checks, and the same with 100 ns spun per launch. Carry `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
M="cached,cached graph off,driver no context + checks,driver no context + checks + 100 ns"
timeout 500 python3 benchmarks/conc/throughput.py --launches 20000 --reps 31 --diagnose --threads 4,8 \
  --only "$M" > $O/threads_n123.txt 2>&1; echo "rc=$?" >> $O/threads_n123.txt
cut -c1-250 $O/threads_n123.txt
