#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N1 (one H100, nvidia-h100-x1, a session's first call): every GPU test on the tree whose
# last C changes ran on the CPU only (two sessions: review mends, the direct small pairs), the synchronous
# alloc + free(NULL) pairs with the new MGPU_CACHED_ALLOCATOR_SYNC_DIRECT_MAX beside every size cached
# (untouched and touched), thread throughput with more launches and reps (the bound: the driver
# loop with a context push / pop per launch), whether the driver launches with no context current
# (launch_threads.c's -nocontext probes), and the 301-kernel module's first call.
# Carry `.gpu` (start-src: the session's starting tree), `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
timeout 100 python3 -m pytest -q -rf --tb=short tests/gpu/ > $O/pytest-gpu.log 2>&1
tail -4 $O/pytest-gpu.log
timeout 150 python3 benchmarks/alloc_bench.py --pairs --rounds 5 > $O/alloc.txt 2>&1
echo "rc=$?" >> $O/alloc.txt; cat $O/alloc.txt
timeout 200 python3 benchmarks/conc/throughput.py --launches 3000 --reps 5 --diagnose > $O/throughput.txt 2>&1
echo "rc=$?" >> $O/throughput.txt; cat $O/throughput.txt
# can a launch skip the per-launch context push / pop? (launch_threads.c's -nocontext probes)
cc -O2 -std=c11 -o /tmp/lt benchmarks/conc/launch_threads.c $(python3 -c "import mgpu_cached; print(mgpu_cached.ldflags())") -ldl -lpthread
for r in 1 2 3; do for m in driver driver-scoped driver-nocontext driver-graph driver-graph-nocontext; do
  timeout 20 /tmp/lt $m tests/data/kernels.fatbin 3000 1 2 4 8 16 2>&1; done; done > $O/nocontext_probe.txt
cat $O/nocontext_probe.txt
timeout 100 python3 benchmarks/first_call.py --out /tmp/fc --rounds 10 --n 200 --reps 3 > $O/first_call.log 2>&1
cat /tmp/fc/*.md > $O/first_call.md 2>/dev/null
head -12 $O/first_call.md
