#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# One device call, run K2 on the H100: the numbers of issues 19 and 21 side by side in one run with
# the tree before issue 19 (`before-391bd88`, .gpu/base-src) and this session's starting tree
# (`start-d234ea0`, .gpu/start-src), both preloaded into the same binaries: every GPU test, the
# suite (empty, stencil, large, async, async_prealloc; LLVM 19 and 22), alloc + free(NULL) pairs,
# the 301-kernel module's first call (and stage by stage), chains and thread throughput. Carry
# `.whl` and `.gpu`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
B=$R/.gpu/base/libmgpu_cached.so; S=$R/.gpu/start/libmgpu_cached.so
timeout 100 python3 -m pytest -q -rs tests/gpu/ > $O/pytest-gpu.log 2>&1
timeout 200 python3 benchmarks/run.py --out /tmp/suite --programs empty,stencil,large,async,async_prealloc \
  --llvm 19,22 --rounds 3 --reps 3 --scale 0.3 --skip stock-named,preload \
  --config before-391bd88:LD_PRELOAD=$B --config start-d234ea0:LD_PRELOAD=$S > /tmp/suite.log 2>&1
echo "suite rc=$?" >> /tmp/suite.log
{ cat /tmp/suite/results.md; tail -3 /tmp/suite.log; } > $O/suite.md 2>&1
cp /tmp/suite/results.json $O/suite.json 2>/dev/null
timeout 90 python3 benchmarks/alloc_bench.py --pairs --rounds 5 --before $S > $O/alloc.txt 2>&1
echo "rc=$?" >> $O/alloc.txt
mkdir -p /tmp/sb && cp $S /tmp/sb/libmgpu_cached.so
timeout 60 python3 benchmarks/first_call.py --out /tmp/fc --rounds 6 --n 200 --reps 3 --before /tmp/sb > $O/first_call.log 2>&1
cat /tmp/fc/*.md > $O/first_call.md 2>/dev/null
OUT=$O timeout 60 sh benchmarks/runs/h100_first_call_probe.sh > /dev/null 2>&1
timeout 70 python3 benchmarks/chains.py --out /tmp/ch --k 10,100 --llvm 22,19 --rounds 3 --reps 3 --launches 3000 > $O/chains.log 2>&1
timeout 80 python3 benchmarks/conc/throughput.py --launches 1500 --reps 3 --before $S --diagnose > $O/throughput.txt 2>&1
echo "rc=$?" >> $O/throughput.txt
tail -3 $O/pytest-gpu.log; grep -E "^\| " $O/suite.md | head -14 | cut -c1-260; tail -16 $O/alloc.txt
cat $O/first_call.md | head -12; sort $O/first_call_probe.txt 2>/dev/null | head -24; tail -7 $O/chains.log; tail -16 $O/throughput.txt
