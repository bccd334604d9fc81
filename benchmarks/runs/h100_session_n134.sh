#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N134 (one H100, nvidia-h100-x1): issue 21 item 1, the library's shapes at 4 and 16 threads
# against the driver loop carrying the same host work per launch. (1) launch_path.py at 1, 4 and
# 16 threads (7 rounds): the library's own host time per launch of each shape on this host.
# (2) throughput.py at 4 and 16 threads, 31 reps: the library's three shapes, the bound (the
# driver with no context current and the library's two checks), and the bound with 70, 140 and
# 300 ns spun per launch: the library's own host time per launch of the LLVM >= 21 shape, the
# blob in the executable and the blob on the heap on this H100's host (run N133's launch_path:
# 65-70, 131-154, 284-318 ns). Carry `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
timeout 120 python3 benchmarks/conc/launch_path.py --rounds 7 --threads 1,4,16 \
  > $O/launch_path_n134.txt 2>&1; echo "rc=$?" >> $O/launch_path_n134.txt
cat $O/launch_path_n134.txt
M="cached,cached llvm19-load,cached llvm19-load exe,driver no context + checks"
timeout 400 python3 benchmarks/conc/throughput.py --launches 20000 --reps 31 --diagnose --threads 4,16 \
  --spin 70,140,300 --only "$M,driver no context + checks + 70 ns,driver no context + checks + 140 ns,driver no context + checks + 300 ns" \
  > $O/threads_n134.txt 2>&1
echo "rc=$?" >> $O/threads_n134.txt
cut -c1-300 $O/threads_n134.txt | tail -8
