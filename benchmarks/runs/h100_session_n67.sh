#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N67 (one H100, nvidia-h100-x1): the thread throughput of the final code of this session, the
# load-per-launch shape with the blob on the heap (JIT runner) and in the executable's .rodata
# (MLIR's AOT code), beside stock behaviour and the driver's loops, 11 reps. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
timeout 400 python3 benchmarks/conc/throughput.py --launches 20000 --reps 11 --diagnose \
  --only "cached,cached llvm19-load,cached llvm19-load exe,stock,driver ctx push/pop,driver no context" \
  > $O/throughput_n67.txt 2>&1
echo "rc=$?" >> $O/throughput_n67.txt; tail -14 $O/throughput_n67.txt
