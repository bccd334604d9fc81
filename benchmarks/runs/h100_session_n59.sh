#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N59 (one H100, nvidia-h100-x1): this session's final C code (7b4086d): the thread throughput
# beside the driver's own loop with the context pushed and popped around each launch (what the
# stock wrapper and the library must do in a thread without a current context; 15 reps); the
# README's async rows (the allocating step and the step with buffers made once, 12 rounds)
# beside the tree before issue 19 and this session's starting tree fcecbe0. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
timeout 240 python3 benchmarks/conc/throughput.py --launches 20000 --reps 15 --diagnose \
  --only "cached,cached llvm19-load,stock,driver ctx push/pop" > $O/throughput_bound.txt 2>&1
echo "rc=$?" >> $O/throughput_bound.txt; tail -8 $O/throughput_bound.txt
ROUNDS=12 side_by_side async_rows 280 async,async_prealloc \
  --config before-391bd88:LD_PRELOAD=$B --config start-fcecbe0:LD_PRELOAD=$S
