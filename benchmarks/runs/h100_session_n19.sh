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
timeout 100 python3 -m pytest -q -rf --tb=short tests/gpu/ > $O/pytest-gpu.log 2>&1
tail -3 $O/pytest-gpu.log
timeout 100 sh benchmarks/first_call_stages/run.sh 12 > $O/first_call_stages.txt 2>&1; head -14 $O/first_call_stages.txt
mkdir -p /tmp/sb && cp $S /tmp/sb/libmgpu_cached.so
timeout 100 python3 benchmarks/first_call.py --out /tmp/fc --rounds 10 --n 200 --reps 3 --before /tmp/sb > $O/first_call.log 2>&1
cat /tmp/fc/first_call.md > $O/first_call.md 2>/dev/null; cat $O/first_call.md
ALLOC_BENCH_BEFORE_LIB=$S timeout 120 python3 benchmarks/alloc_bench.py --pairs --rounds 5 > $O/alloc.txt 2>&1
echo "rc=$?" >> $O/alloc.txt; grep -E "kind|^host_shared|^device " $O/alloc.txt
timeout 200 python3 benchmarks/conc/throughput.py --launches 20000 --reps 5 --diagnose --before $S \
  --only "cached,stock,driver ctx push/pop,before" > $O/throughput.txt 2>&1; echo "rc=$?" >> $O/throughput.txt; cat $O/throughput.txt
CFG="--config start-3212cac:LD_PRELOAD=$S$(bisect_configs)"
side_by_side steady_ab 150 empty,large $CFG
