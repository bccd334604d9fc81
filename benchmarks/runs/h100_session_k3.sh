#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# One device call, run K3 on the H100: every GPU test after the module-API merge, the async step
# side by side with the tree before the program-thread clearing (nb-D; `.gpu/pred-src`, built
# here) and this session's starting tree (5 rounds), review2's gpu_exp.c (G1-G12), the PyTorch
# proof, and the differential tester's reset and sticky classes (gpu_validate.sh faults). Carry
# `.whl`, `.gpu`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
S=$R/.gpu/start/libmgpu_cached.so; P=/tmp/pred/libmgpu_cached.so
mkdir -p /tmp/pred && cc $CF -I.gpu/pred-src/csrc $(find .gpu/pred-src/csrc -mindepth 2 -name "*.c") -o $P -ldl || exit 1
timeout 100 python3 -m pytest -q -rs tests/gpu/ > $O/pytest-gpu.log 2>&1
timeout 170 python3 benchmarks/run.py --out /tmp/suite --programs async,async_prealloc \
  --llvm 19,22 --rounds 5 --reps 3 --scale 0.3 --skip stock,stock-named,preload \
  --config pre-nbD:LD_PRELOAD=$P --config start-d234ea0:LD_PRELOAD=$S > /tmp/suite.log 2>&1
echo "suite rc=$?" >> /tmp/suite.log
{ grep -E "^\| " /tmp/suite/results.md | head -8; tail -2 /tmp/suite.log; } > $O/suite_async.md 2>&1
cp /tmp/suite/results.json $O/suite_async.json 2>/dev/null
cc -O1 -std=c11 -D_GNU_SOURCE -o /tmp/gx .gpu/review2/gpu_exp.c -ldl -pthread || exit 1
GX_STOCK_DISABLE=1 timeout 100 /tmp/gx /tmp/libmc.so /tmp/libmc.so > $O/gpu_exp.txt 2>&1
timeout 60 python3 benchmarks/neighbour/torch_neighbour.py --lib /tmp/libmc.so > $O/torch_neighbour.txt 2>&1
echo "rc=$?" >> $O/torch_neighbour.txt
timeout 200 bash tests/difftest/gpu_validate.sh /tmp/dtf faults > /dev/null 2>&1
cp /tmp/dtf/run.log $O/difftest_faults.txt 2>/dev/null
tail -3 $O/pytest-gpu.log; cat $O/suite_async.md | cut -c1-220; grep -E "^G[0-9]+" $O/gpu_exp.txt | cut -c1-300
grep -E "PASS|FAIL" $O/torch_neighbour.txt | tail -3; grep -E '"differences"|== |wall' $O/difftest_faults.txt | cut -c1-200
