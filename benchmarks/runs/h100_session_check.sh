#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# One device call, correctness of the tree (issues 19-21, run H on the H100): every GPU test with
# the graph path on and off, review2's gpu_exp.c (G1-G12; the stock column is the library with
# MGPU_CACHED_DISABLE=1), the PyTorch-in-the-process proof, and the differential tester: issue 19's
# classes (neighbour, faults) and the ordered profile. Carry `.whl` and `.gpu` (see
# benchmarks/neighbour/setup_h100.sh). About 8 minutes. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
{ timeout 120 python3 -m pytest -q -rs tests/gpu/ 2>&1 | tail -15; echo "== MGPU_CACHED_GRAPH=0";
  MGPU_CACHED_GRAPH=0 timeout 120 python3 -m pytest -q -rs tests/gpu/ 2>&1 | tail -15; } > $O/pytest-gpu.log
timeout 100 python3 -m pytest -v tests/gpu/test_module_state_gpu.py 2>&1 | grep -E "PASS|FAIL|ERROR|passed|failed" > $O/pytest-modstate.log
cc -O1 -std=c11 -D_GNU_SOURCE -o /tmp/gx .gpu/review2/gpu_exp.c -ldl -pthread || exit 1
GX_STOCK_DISABLE=1 timeout 150 /tmp/gx /tmp/libmc.so /tmp/libmc.so > $O/gpu_exp.txt 2>&1
timeout 90 python3 benchmarks/neighbour/torch_neighbour.py --lib /tmp/libmc.so > $O/torch_neighbour.txt 2>&1
echo "rc=$?" >> $O/torch_neighbour.txt
timeout 170 bash tests/difftest/gpu_validate.sh /tmp/dtn neighbour > /dev/null 2>&1
cp /tmp/dtn/run.log $O/difftest_neighbour.txt 2>/dev/null
timeout 150 bash tests/difftest/gpu_validate.sh /tmp/dtf faults > /dev/null 2>&1
cp /tmp/dtf/run.log $O/difftest_faults.txt 2>/dev/null
timeout 60 python3 tests/difftest/difftest.py --profile ordered --programs 1000 --seed 23 --timeout 20 \
  --minimise 1 --minimise-budget 20 --out /tmp/dto > $O/difftest_ordered.txt 2>&1
echo "rc=$?" >> $O/difftest_ordered.txt
grep -E "passed|failed" $O/pytest-gpu.log; cat $O/pytest-modstate.log | tail -5
grep -E "^G[0-9]+" $O/gpu_exp.txt | cut -c1-150; grep -E "PASS|FAIL" $O/torch_neighbour.txt | head -8
grep -E '"differences"' $O/difftest_*.txt | cut -c1-200
