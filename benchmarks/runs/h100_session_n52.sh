#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N52 (one H100, nvidia-h100-x1): where the library loses to stock behaviour from 4 threads
# (runs N39, N48): the thread throughput, 9 reps, cached and stock beside the driver's push / pop
# loop, twice: as shipped, and with MGPU_CACHED_GRAPH=0 for every mode (no graph gate at all: the
# driver modes do not read it). Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
for g in default graph0; do
  e=""; [ $g = graph0 ] && e="MGPU_CACHED_GRAPH=0"
  env $e timeout 250 python3 benchmarks/conc/throughput.py --launches 20000 --reps 9 --diagnose \
    --only "cached,stock,driver ctx push/pop" > $O/threads_$g.txt 2>&1
  echo "rc=$?" >> $O/threads_$g.txt; tail -8 $O/threads_$g.txt
done
