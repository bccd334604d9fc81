#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N16 (one H100, nvidia-h100-x1): where issue 21's thread loss (0.96-0.97x the driver's
# push/pop loop at 4-16 threads, run N5) comes from. The launch path's counters at 1/4/8/16
# threads (graph launches, the gate's stores), then the thread throughput with the library's
# default and with the graph path off (MGPU_CACHED_GRAPH=0). Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
cc -std=c11 -O2 -pthread -o /tmp/lt benchmarks/conc/launch_threads.c $(mgpu-cached --ldflags) -ldl
for t in 1 4 8 16; do
  echo "== $t threads"; MGPU_CACHED_STATS=1 /tmp/lt mgpu tests/data/kernels.fatbin 20000 $t 2>&1 |
    grep -E "threads|launches|graph|contended|stream_path|exec" | tr '\n' ' '; echo
done > $O/gate_stats.txt 2>&1; cat $O/gate_stats.txt | cut -c1-900
for g in default 0; do
  [ $g = 0 ] && export MGPU_CACHED_GRAPH=0
  echo "== MGPU_CACHED_GRAPH=$g"
  timeout 200 python3 benchmarks/conc/throughput.py --launches 20000 --reps 5 \
    --only "cached,stock,driver ctx push/pop" 2>&1
done > $O/throughput_graph.txt; unset MGPU_CACHED_GRAPH; cat $O/throughput_graph.txt
