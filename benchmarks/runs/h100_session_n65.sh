#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N65 (one H100, nvidia-h100-x1): bare graph launches (583d073): the README's synchronous and
# async rows (8 rounds) beside the same library pushing (MGPU_CACHED_BARE_LAUNCH=0), the tree
# before issue 19 and this session's starting tree (6f88077); the thread throughput, bare and
# pushed, beside the driver's loops (9 reps). Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
timeout 200 python3 benchmarks/conc/throughput.py --launches 20000 --reps 9 --diagnose \
  --only "cached,cached pushed,cached llvm19-load,cached llvm19-load pushed,driver ctx push/pop,driver no context" \
  > $O/throughput_n65.txt 2>&1
echo "rc=$?" >> $O/throughput_n65.txt; tail -14 $O/throughput_n65.txt
ROUNDS=8 side_by_side rows_n65 360 empty,stencil,large,async,async_prealloc \
  --config pushed:MGPU_CACHED_BARE_LAUNCH=0 --config before-391bd88:LD_PRELOAD=$B \
  --config start-6f88077:LD_PRELOAD=$S
