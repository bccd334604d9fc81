#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# One device call, the numbers of issues 19 and 21 (run H on the H100), every table side by side in
# one run with the trees before: `before-391bd88` (before issue 19, .gpu/base-src) and
# `start-2b44c70` (this session's starting tree, before issue 21's work, .gpu/start-src), both
# preloaded into the same binaries. Carry `.whl` and `.gpu`. About 9.5 minutes (with every GPU test, graph path on and off, first); logs under $OUT:
#   suite.md      benchmarks/run.py: empty, stencil, large, async, async_prealloc; LLVM 19 and 22
#   alloc.txt     benchmarks/alloc_bench.py --pairs: alloc + free(NULL) pairs, 256 B .. 64 MiB
#   first_call/   benchmarks/first_call.py: the 301-kernel module's first call
#   chains/       benchmarks/chains.py: chains of 10 / 100 launches, LLVM 19 and 22 shapes
#   throughput.txt benchmarks/conc/throughput.py --diagnose: 1-16 threads
#   sparse_compare.md benchmarks/runs/h100_sparse_compare.sh: every sparse program, cached / stock
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
gpu_tests_on_off 60
readme_suite 170 0.3 start-2b44c70
timeout 100 python3 benchmarks/alloc_bench.py --pairs --rounds 5 --before $S > $O/alloc.txt 2>&1
echo "rc=$?" >> $O/alloc.txt
mkdir -p /tmp/sb && cp $S /tmp/sb/libmgpu_cached.so
timeout 60 python3 benchmarks/first_call.py --out $O/first_call --rounds 6 --n 200 --reps 3 --before /tmp/sb > $O/first_call.log 2>&1
timeout 60 python3 benchmarks/chains.py --out $O/chains --k 10,100 --llvm 22,19 --rounds 2 --reps 3 --launches 3000 > $O/chains.log 2>&1
timeout 75 python3 benchmarks/conc/throughput.py --launches 1500 --reps 3 --before $S --diagnose > $O/throughput.txt 2>&1
echo "rc=$?" >> $O/throughput.txt
OUT=$O timeout 70 sh benchmarks/runs/h100_sparse_compare.sh
cat $O/pytest-gpu.log; tail -30 $O/suite.md | cut -c1-250; tail -25 $O/alloc.txt; cat $O/first_call/*.md 2>/dev/null | head -20
cat $O/chains/*.md 2>/dev/null | head -20; tail -25 $O/throughput.txt; cat $O/sparse_compare.md 2>/dev/null | head -20
