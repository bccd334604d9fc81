#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N40 (one H100, nvidia-h100-x1): run N39 put the library at 0.87x the driver loop at 4 threads
# (run N20: 0.94x): the thread throughput, 9 reps, the library beside this session's starting tree
# preloaded ("before"), both shapes (LLVM >= 21, load per launch). Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
timeout 300 python3 benchmarks/conc/throughput.py --launches 20000 --reps 9 --before $R/.gpu/start/libmgpu_cached.so \
  --only "cached,cached llvm19-load,before,before llvm19-load" > $O/throughput.txt 2>&1
echo "rc=$?" >> $O/throughput.txt; tail -20 $O/throughput.txt
