#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run M1 (two GPUs, nvidia-h100-x2): the session's starting tree (after the review mends, which had
# run on the CPU only). Every GPU test with the graph path on and off (the two-GPU tests run here)
# and objects staying on their device, then review 2's G1-G12, PyTorch in the same process and
# the differential tester's tight, capture and threads classes on device 0. Carry `.gpu`, `.whl`.
# `sh benchmarks/runs/two_gpu_m1.sh`; logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
OUT=$O sh benchmarks/runs/h200x2_gpu_tests.sh > /dev/null 2>&1
cat $O/device.txt; tail -3 $O/pytest-gpu.log; grep -c "exit 0" $O/two-gpu.txt
cc -O1 -std=c11 -D_GNU_SOURCE -o /tmp/gx .gpu/review2/gpu_exp.c -ldl -pthread || exit 1
GX_STOCK_DISABLE=1 timeout 100 /tmp/gx /tmp/libmc.so /tmp/libmc.so > $O/gpu_exp.txt 2>&1
timeout 60 python3 benchmarks/neighbour/torch_neighbour.py --lib /tmp/libmc.so > $O/torch_neighbour.txt 2>&1
echo "rc=$?" >> $O/torch_neighbour.txt
export DIFFTEST_MARGIN_MB=16
for p in stock ordered; do
  timeout 60 python3 tests/difftest/difftest.py --timeout 20 --profile $p --classes pressure --programs 200 \
    --seed 61 --minimise 1 --minimise-budget 10 --out /tmp/dt-$p > $O/difftest_tight_$p.txt 2>&1
done
unset DIFFTEST_MARGIN_MB
for c in capture threads; do
  timeout 70 python3 tests/difftest/difftest.py --timeout 20 --profile ordered --classes $c --programs 600 \
    --seed 67 --minimise 1 --minimise-budget 10 --out /tmp/dt-$c > $O/difftest_$c.txt 2>&1
done
grep -h '"differences"' $O/difftest_*.txt | cut -c1-160; grep -E "^G[0-9]+" $O/gpu_exp.txt | cut -c1-300
grep -E "PASS|FAIL|SUMMARY" $O/torch_neighbour.txt | tail -8
