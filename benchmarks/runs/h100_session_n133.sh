#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N133 (one H100, nvidia-h100-x1): issue 21 item 1, where the library's host time per launch
# goes under threads. (1) benchmarks/conc/launch_path.py: the library's own host time per
# iteration of each shape from 1 to 16 threads with no GPU work (quick_driver.c), this tree
# ("installed") beside the session's starting tree (.gpu/start-src, "start"), 7 rounds.
# (2) Thread throughput at 4 threads (throughput.py --diagnose, 21 reps): the library's shapes,
# start's (--before), the bound, the bound with 25, 50 and 100 ns spun per launch (where the cost
# of host work beside the driver's begins) and the bound with the heap blob compared per launch. Carry `.gpu` and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
lscpu | grep -E "Model name|MHz|^CPU\(s\)" > $O/host.txt; which perf >> $O/host.txt 2>&1
timeout 200 python3 benchmarks/conc/launch_path.py --rounds 7 --lib start=.gpu/start/libmgpu_cached.so \
  > $O/launch_path_n133.txt 2>&1; echo "rc=$?" >> $O/launch_path_n133.txt
cat $O/launch_path_n133.txt
M="cached,cached llvm19-load,cached llvm19-load exe,before,before llvm19-load,before llvm19-load exe"
M="$M,driver no context + checks"
M="$M,driver no context + checks + 25 ns,driver no context + checks + 50 ns"
M="$M,driver no context + checks + 100 ns,driver no context + checks + compare"
timeout 330 python3 benchmarks/conc/throughput.py --launches 20000 --reps 21 --diagnose --threads 4 \
  --before .gpu/start/libmgpu_cached.so --only "$M" > $O/threads_n133.txt 2>&1
echo "rc=$?" >> $O/threads_n133.txt
cut -c1-300 $O/threads_n133.txt | tail -8
