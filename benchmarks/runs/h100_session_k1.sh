#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# One device call, run K1 on the H100: the tight pressure class again after "no pool near capacity"
# (gpu_validate.sh tight), every GPU test, the managed-memory clearing probe (issue 21 item 3b),
# and the thread-cache hit path (issue 21 items 1 and 2): chains (LLVM 19 and 22 shapes; the
# session's starting tree d234ea0 preloaded for the `before` column), thread throughput against
# that tree, and the load/look-up/unload triple against the real driver. Carry `.whl`, `.gpu`.
set -u
. benchmarks/neighbour/setup_h100.sh
S=$R/.gpu/start/libmgpu_cached.so
L=$(python3 -c "import mgpu_cached,os;print(os.path.join(os.path.dirname(mgpu_cached.__file__),'lib','libmgpu_cached.so'))")
timeout 100 python3 -m pytest -q -rs tests/gpu/ > $O/pytest-gpu.log 2>&1
timeout 250 bash tests/difftest/gpu_validate.sh /tmp/dtt tight > /dev/null 2>&1
cp /tmp/dtt/run.log $O/difftest_tight.txt 2>/dev/null
cc -O2 -Ibenchmarks -o /tmp/mcp benchmarks/managed_clear_probe.c -ldl -lm && timeout 40 /tmp/mcp 21 > $O/managed_clear_probe.txt 2>&1
timeout 70 python3 benchmarks/chains.py --out $O/chains --k 10,100 --llvm 22,19 --rounds 3 --reps 3 --launches 3000 > $O/chains.log 2>&1
LD_PRELOAD=$S timeout 70 python3 benchmarks/chains.py --out $O/chains_start --k 10,100 --llvm 22,19 --rounds 3 --reps 3 --launches 3000 > $O/chains_start.log 2>&1
timeout 80 python3 benchmarks/conc/throughput.py --launches 1500 --reps 3 --before $S --diagnose > $O/throughput.txt 2>&1
echo "rc=$?" >> $O/throughput.txt
cc -O2 -pthread -o /tmp/hp benchmarks/conc/hit_path_cpu.c -ldl && {
  echo "== this tree"; timeout 30 /tmp/hp $L tests/data/kernels.fatbin:empty 200000 1 2 4 8 16
  echo "== start-d234ea0"; timeout 30 /tmp/hp $S tests/data/kernels.fatbin:empty 200000 1 2 4 8 16; } > $O/hit_path.txt 2>&1
tail -3 $O/pytest-gpu.log; grep -E '"differences"|== ' $O/difftest_tight.txt | cut -c1-200
cat $O/managed_clear_probe.txt; cat $O/chains/*.md | tail -8; cat $O/chains_start/*.md | tail -6
tail -30 $O/throughput.txt; cat $O/hit_path.txt
