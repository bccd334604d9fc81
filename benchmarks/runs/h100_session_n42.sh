#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N42 (one H100, nvidia-h100-x1): MGPU_CACHED_GRAPH_THREADS=2 (the graph path open to two
# threads launching side by side; run N1's probe put the driver's graph launches from 2 threads at
# 1.22-1.35x its stream launches) against this session's starting tree (preloaded, "before": one
# thread only): the thread throughput, 9 reps, both shapes. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
timeout 300 python3 benchmarks/conc/throughput.py --launches 20000 --reps 9 --before $R/.gpu/start/libmgpu_cached.so \
  --only "cached,cached llvm19-load,before,before llvm19-load" > $O/throughput.txt 2>&1
echo "rc=$?" >> $O/throughput.txt; tail -20 $O/throughput.txt
