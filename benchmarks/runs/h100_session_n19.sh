#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N19 (one H100, nvidia-h100-x1): this session's tree after the first-call mends (early launches
# before the capture check, fewer first-touch pages), the push without a look, the untouched
# host_shared free: every GPU test; the first call call by call and beside the session's starting
# tree (.gpu/start-src, carried); the alloc + free(NULL) pairs; the thread throughput with the
# starting tree as "before"; the README's synchronous rows beside the starting tree and b1bf448.
# Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
gpu_tests 100
first_call_checks 12 10
ALLOC_BENCH_BEFORE_LIB=$S timeout 120 python3 benchmarks/alloc_bench.py --pairs --rounds 5 > $O/alloc.txt 2>&1
echo "rc=$?" >> $O/alloc.txt; grep -E "kind|^host_shared|^device " $O/alloc.txt
timeout 200 python3 benchmarks/conc/throughput.py --launches 20000 --reps 5 --diagnose --before $S \
  --only "cached,stock,driver ctx push/pop,before" > $O/throughput.txt 2>&1; echo "rc=$?" >> $O/throughput.txt; cat $O/throughput.txt
CFG="--config start-3212cac:LD_PRELOAD=$S$(bisect_configs)"
side_by_side steady_ab 150 empty,large $CFG
