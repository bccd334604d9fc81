#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run M4 (two GPUs, nvidia-h100-x2; timings on device 0): the session's final library. Every GPU
# test with the graph path on and off (the two-GPU tests included), chains of 10 / 100 launches in
# the LLVM 22, 19 and 19ro shapes, the 301-kernel module's first call against stock behaviour,
# and the README's suite side by side with stock, the tree before issue 19 (before-391bd88) and
# this session's starting tree (start-9d5fc19), both preloaded, linked as the package is
# (setup_h100.sh). Carry `.gpu`, `.whl`. `sh benchmarks/runs/two_gpu_m4.sh`; logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
B=$R/.gpu/base/libmgpu_cached.so; S=$R/.gpu/start/libmgpu_cached.so
{ timeout 70 python3 -m pytest -q -rf tests/gpu/ 2>&1 | tail -4; echo "== MGPU_CACHED_GRAPH=0";
  MGPU_CACHED_GRAPH=0 timeout 70 python3 -m pytest -q -rf tests/gpu/ 2>&1 | tail -4; } > $O/pytest-gpu.log
timeout 100 python3 benchmarks/chains.py --out /tmp/ch --k 10,100 --llvm 22,19,19ro --rounds 3 --reps 3 --launches 3000 > $O/chains.log 2>&1
cp /tmp/ch/chains.md $O/ 2>/dev/null
timeout 75 python3 benchmarks/first_call.py --out /tmp/fc --rounds 8 --n 200 --reps 3 > $O/first_call.log 2>&1
cat /tmp/fc/*.md > $O/first_call.md 2>/dev/null
timeout 215 python3 benchmarks/run.py --out /tmp/suite --programs empty,stencil,large,async,async_prealloc \
  --llvm 19,22 --rounds 3 --reps 3 --scale 0.25 --skip stock-named,preload \
  --config before-391bd88:LD_PRELOAD=$B --config start-9d5fc19:LD_PRELOAD=$S > /tmp/suite.log 2>&1
echo "suite rc=$?" >> /tmp/suite.log
{ grep -E "^\| " /tmp/suite/results.md | head -12; tail -2 /tmp/suite.log; } > $O/suite.md 2>&1
cp /tmp/suite/results.json $O/suite.json 2>/dev/null
cat $O/pytest-gpu.log; grep -E "^\| " $O/chains.md; head -12 $O/first_call.md; cut -c1-250 $O/suite.md
