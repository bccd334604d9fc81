#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N8 (one H100, nvidia-h100-x1): the session's final tree. Every GPU test with the graph path
# on and off; the README's rows beside stock, the tree before issue 19, the session's starting
# tree and, built alike and preloaded (.gpu/bisect/<commit>/csrc, carried), the tree before the
# exec thresholds (b1bf448) and the final tree: whether the early-launch check out of line gave
# the 0.1-0.15 us back (runs N6, N7); the first call against the starting tree; thread
# throughput. Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
gpu_tests_on_off 90
cat $O/pytest-gpu.log
CFG="--config before-391bd88:LD_PRELOAD=$B --config start-ac0760c:LD_PRELOAD=$S$(bisect_configs)"
timeout 330 python3 benchmarks/run.py --out /tmp/suite --programs empty,stencil,large,async,async_prealloc \
  --llvm 19,22 --rounds 4 --reps 3 --scale 0.3 --skip stock-named,preload $CFG > /tmp/suite.log 2>&1
echo "suite rc=$?" >> /tmp/suite.log
{ cat /tmp/suite/results.md; tail -2 /tmp/suite.log; } > $O/suite.md 2>&1
cp /tmp/suite/results.json $O/suite.json 2>/dev/null; sed -n 1,16p $O/suite.md | cut -c1-420
mkdir -p /tmp/sb && cp $S /tmp/sb/libmgpu_cached.so
timeout 90 python3 benchmarks/first_call.py --out /tmp/fc --rounds 8 --n 200 --reps 3 --before /tmp/sb > $O/first_call.log 2>&1
cat /tmp/fc/first_call.md > $O/first_call.md 2>/dev/null; cat $O/first_call.md
timeout 100 python3 benchmarks/conc/throughput.py --launches 20000 --reps 5 --diagnose \
  --only "cached,cached llvm19-load,driver ctx push/pop" > $O/throughput.txt 2>&1
echo "rc=$?" >> $O/throughput.txt; cat $O/throughput.txt
