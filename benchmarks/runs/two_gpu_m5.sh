#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run M5 (two GPUs, nvidia-h100-x2, right after M4): the final library's neighbour checks (review
# 2's G1-G12 stock and cached side by side, PyTorch in the same process, the differential
# tester's module-globals, capture and tight classes on device 0) and chains of 10 / 100 launches
# in the LLVM 22, 19 and 19ro shapes. Carry `.gpu`, `.whl`. `sh benchmarks/runs/two_gpu_m5.sh`;
# logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
cc -O1 -std=c11 -D_GNU_SOURCE -o /tmp/gx .gpu/review2/gpu_exp.c -ldl -pthread || exit 1
GX_STOCK_DISABLE=1 timeout 100 /tmp/gx /tmp/libmc.so /tmp/libmc.so > $O/gpu_exp.txt 2>&1
timeout 60 python3 benchmarks/neighbour/torch_neighbour.py --lib /tmp/libmc.so > $O/torch_neighbour.txt 2>&1
echo "rc=$?" >> $O/torch_neighbour.txt
for c in modglobal capture; do
  timeout 50 python3 tests/difftest/difftest.py --timeout 20 --profile ordered --classes $c --programs 400 \
    --seed 73 --minimise 1 --minimise-budget 10 --out /tmp/dt-$c > $O/difftest_$c.txt 2>&1
done
DIFFTEST_MARGIN_MB=16 timeout 50 python3 tests/difftest/difftest.py --timeout 20 --profile ordered --classes pressure \
  --programs 150 --seed 79 --minimise 1 --minimise-budget 10 --out /tmp/dt-tight > $O/difftest_tight_ordered.txt 2>&1
timeout 100 python3 benchmarks/chains.py --out /tmp/ch --k 10,100 --llvm 22,19,19ro --rounds 3 --reps 3 --launches 3000 > $O/chains.log 2>&1
cp /tmp/ch/chains.md $O/ 2>/dev/null
grep -h '"differences"' $O/difftest_*.txt | cut -c1-160; grep -E "^G[0-9]+" $O/gpu_exp.txt | cut -c1-300
grep -E "PASS|FAIL|SUMMARY" $O/torch_neighbour.txt | tail -8; grep -E "^\| " $O/chains.md
