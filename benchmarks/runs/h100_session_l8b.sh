#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# One device call, run L8b on the H100 (the session's final library): review 2's GPU program
# (G1-G12, stock and cached side by side), PyTorch in the same process, and the differential
# tester's neighbour classes: the tight memory class (16 MiB beyond the units, both profiles),
# module globals, sticky errors and context resets. Carry `.whl`, `.gpu`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
cc -O1 -std=c11 -D_GNU_SOURCE -o /tmp/gx .gpu/review2/gpu_exp.c -ldl -pthread || exit 1
GX_STOCK_DISABLE=1 timeout 100 /tmp/gx /tmp/libmc.so /tmp/libmc.so > $O/gpu_exp.txt 2>&1
timeout 60 python3 benchmarks/neighbour/torch_neighbour.py --lib /tmp/libmc.so > $O/torch_neighbour.txt 2>&1
echo "rc=$?" >> $O/torch_neighbour.txt
export DIFFTEST_MARGIN_MB=16
for p in stock ordered; do
  timeout 70 python3 tests/difftest/difftest.py --timeout 20 --profile $p --classes pressure --programs 300 \
    --seed 53 --minimise 1 --minimise-budget 10 --out /tmp/dt-$p > $O/difftest_tight_$p.txt 2>&1
done
unset DIFFTEST_MARGIN_MB
timeout 70 python3 tests/difftest/difftest.py --timeout 20 --profile ordered --classes modglobal --programs 600 \
  --seed 59 --minimise 1 --minimise-budget 10 --out /tmp/dt-modg > $O/difftest_modglobal.txt 2>&1
timeout 150 bash tests/difftest/gpu_validate.sh /tmp/dtf faults > /dev/null 2>&1
cp /tmp/dtf/run.log $O/difftest_faults.txt 2>/dev/null
grep -h '"differences"' $O/difftest_*.txt | cut -c1-160; grep -E "^G[0-9]+" $O/gpu_exp.txt | cut -c1-300
grep -E "PASS|FAIL|SUMMARY" $O/torch_neighbour.txt | tail -8; grep -E '"differences"|== |wall' $O/difftest_faults.txt | cut -c1-200
