#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N73 (one H100, nvidia-h100-x1), on 7e264ec's C code: the bounds of two open targets of issue
# 21. The async step with its buffers from the driver's own stream-ordered allocator (device pool
# and managed pool) beside the same step with the buffers made once, and the library's allocating
# step beside its made-once step, interleaved (benchmarks/alloc_floor.py, 10 rounds, LLVM 22 and
# 19); the driver's own graph launches from 1-16 threads beside its stream launches (7 reps).
# Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
for v in 22 19; do
  timeout 200 python3 benchmarks/alloc_floor.py --rounds 10 --llvm $v --json $O/alloc_floor_$v.json \
    > $O/alloc_floor_$v.md 2> $O/alloc_floor_$v.err; echo "rc=$?" >> $O/alloc_floor_$v.md
  cat $O/alloc_floor_$v.md; grep -v "^+" $O/alloc_floor_$v.err | tail -3
done
timeout 120 python3 benchmarks/conc/throughput.py --launches 20000 --reps 7 --diagnose \
  --only "driver graph,driver no context,cached" > $O/throughput_graph_n73.txt 2>&1
echo "rc=$?" >> $O/throughput_graph_n73.txt; cat $O/throughput_graph_n73.txt | cut -c1-200
