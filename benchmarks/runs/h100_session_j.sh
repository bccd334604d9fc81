#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# One device call, run J on the H100 (issue 19 item 3, the lean free): every GPU test, the tight
# pressure class of the differential tester (gpu_validate.sh tight), review2's gpu_exp.c
# (G1-G12), the PyTorch-in-the-process proof, and the async step with the allocator's variables
# varied side by side with the tree before issue 19 (`before-391bd88`, .gpu/base-src) and this
# session's starting tree (`start-d234ea0`, .gpu/start-src). Carry `.whl` and `.gpu`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
B=$R/.gpu/base/libmgpu_cached.so; S=$R/.gpu/start/libmgpu_cached.so
timeout 100 python3 -m pytest -q -rs tests/gpu/ > $O/pytest-gpu.log 2>&1
cc -O1 -std=c11 -D_GNU_SOURCE -o /tmp/gx .gpu/review2/gpu_exp.c -ldl -pthread || exit 1
GX_STOCK_DISABLE=1 timeout 150 /tmp/gx /tmp/libmc.so /tmp/libmc.so > $O/gpu_exp.txt 2>&1
timeout 90 python3 benchmarks/neighbour/torch_neighbour.py --lib /tmp/libmc.so > $O/torch_neighbour.txt 2>&1
echo "rc=$?" >> $O/torch_neighbour.txt
timeout 240 bash tests/difftest/gpu_validate.sh /tmp/dtt tight > /dev/null 2>&1
cp /tmp/dtt/run.log $O/difftest_tight.txt 2>/dev/null
timeout 150 python3 benchmarks/run.py --out /tmp/suite --programs async,async_prealloc \
  --llvm 19,22 --rounds 3 --reps 3 --scale 0.3 --skip stock,stock-named,preload \
  --config before-391bd88:LD_PRELOAD=$B --config start-d234ea0:LD_PRELOAD=$S \
  --config zero0:MGPU_CACHED_ALLOCATOR_ZERO=0 --config headroom0:MGPU_CACHED_ALLOCATOR_HEADROOM=0 \
  --config reclaim200:MGPU_CACHED_ALLOCATOR_RECLAIM_US=200 > /tmp/suite.log 2>&1
echo "suite rc=$?" >> /tmp/suite.log
{ cat /tmp/suite/results.md; tail -3 /tmp/suite.log; } > $O/suite_async.md 2>&1
cp /tmp/suite/results.json $O/suite_async.json 2>/dev/null
tail -4 $O/pytest-gpu.log; grep -E "^G[0-9]+" $O/gpu_exp.txt | cut -c1-160
grep -E "PASS|FAIL" $O/torch_neighbour.txt | head -8; grep -E '"differences"|== ' $O/difftest_tight.txt | cut -c1-200
cat $O/suite_async.md | cut -c1-300
