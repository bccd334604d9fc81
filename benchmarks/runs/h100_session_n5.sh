#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N5 (one H100, nvidia-h100-x1): after run N4 (the new exec thresholds, the pools' spare rule,
# the 1 MiB direct limit): the GPU tests; the steady launches of the `large` and `empty` programs
# side by side with the session's starting tree in more rounds (run N4's 3 processes per cell
# left `large` LLVM 22 at 7.32 against 6.50 µs); the first call call by call and against the
# starting tree; the alloc + free(NULL) pairs with the 1 MiB limit; thread throughput.
# Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
timeout 100 python3 -m pytest -q -rf --tb=short tests/gpu/ > $O/pytest-gpu.log 2>&1
tail -4 $O/pytest-gpu.log
timeout 150 python3 benchmarks/run.py --out /tmp/ab --programs large,empty --llvm 19,22 --rounds 8 \
  --reps 3 --scale 0.3 --skip stock,stock-named,preload --config start-ac0760c:LD_PRELOAD=$S > /tmp/ab.log 2>&1
echo "rc=$?" >> /tmp/ab.log; { sed -n 1,12p /tmp/ab/results.md; tail -2 /tmp/ab.log; } > $O/steady_ab.md 2>&1
cp /tmp/ab/results.json $O/steady_ab.json 2>/dev/null; cat $O/steady_ab.md | cut -c1-250
mkdir -p /tmp/sb && cp $S /tmp/sb/libmgpu_cached.so
timeout 120 python3 benchmarks/first_call.py --out /tmp/fc --rounds 12 --n 200 --reps 3 --before /tmp/sb > $O/first_call.log 2>&1
cat /tmp/fc/first_call.md > $O/first_call.md 2>/dev/null; cat $O/first_call.md
timeout 100 sh benchmarks/first_call_stages/run.sh 12 > $O/first_call_stages.txt 2>&1; head -24 $O/first_call_stages.txt
timeout 120 python3 benchmarks/alloc_bench.py --pairs --rounds 5 > $O/alloc.txt 2>&1; echo "rc=$?" >> $O/alloc.txt; cat $O/alloc.txt
timeout 150 python3 benchmarks/conc/throughput.py --launches 20000 --reps 5 --diagnose \
  --only "cached,stock,driver ctx push/pop,cached ctx current" > $O/throughput.txt 2>&1
echo "rc=$?" >> $O/throughput.txt; cat $O/throughput.txt
