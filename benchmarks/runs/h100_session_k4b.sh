#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# One device call, run K4b on the H100 (the session's final tree): the differential tester's tight
# pressure class (gpu_validate.sh tight, 400 programs per profile here), the sticky-error class
# (150), the module-globals class (800), review2's gpu_exp.c (G1-G12), the PyTorch proof, and a
# second sample of the suite's empty and async rows against the trees before issue 19 and at the
# session's start. Carry `.whl`, `.gpu`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
B=$R/.gpu/base/libmgpu_cached.so; S=$R/.gpu/start/libmgpu_cached.so
export DIFFTEST_MARGIN_MB=16
for p in stock ordered; do
  timeout 60 python3 tests/difftest/difftest.py --timeout 20 --profile $p --classes pressure --programs 400 \
    --seed 37 --minimise 1 --minimise-budget 10 --out /tmp/dt-$p > $O/difftest_tight_$p.txt 2>&1
done
unset DIFFTEST_MARGIN_MB
timeout 100 python3 tests/difftest/difftest.py --timeout 20 --profile ordered --classes sticky --programs 150 \
  --seed 19 --minimise 1 --minimise-budget 10 --out /tmp/dt-sticky > $O/difftest_sticky.txt 2>&1
timeout 60 python3 tests/difftest/difftest.py --timeout 20 --profile ordered --classes modglobal --programs 800 \
  --seed 41 --minimise 1 --minimise-budget 10 --out /tmp/dt-modg > $O/difftest_modglobal.txt 2>&1
cc -O1 -std=c11 -D_GNU_SOURCE -o /tmp/gx .gpu/review2/gpu_exp.c -ldl -pthread || exit 1
GX_STOCK_DISABLE=1 timeout 100 /tmp/gx /tmp/libmc.so /tmp/libmc.so > $O/gpu_exp.txt 2>&1
timeout 60 python3 benchmarks/neighbour/torch_neighbour.py --lib /tmp/libmc.so > $O/torch_neighbour.txt 2>&1
echo "rc=$?" >> $O/torch_neighbour.txt
timeout 120 python3 benchmarks/run.py --out /tmp/suite --programs empty,async,async_prealloc \
  --llvm 19,22 --rounds 3 --reps 3 --scale 0.3 --skip stock,stock-named,preload \
  --config before-391bd88:LD_PRELOAD=$B --config start-d234ea0:LD_PRELOAD=$S > /tmp/suite.log 2>&1
{ grep -E "^\| " /tmp/suite/results.md | head -8; tail -2 /tmp/suite.log; } > $O/suite2.md 2>&1
grep -h '"differences"' $O/difftest_*.txt | cut -c1-120; grep -E "^G[0-9]+" $O/gpu_exp.txt | cut -c1-120
grep -E "SUMMARY" $O/torch_neighbour.txt; cat $O/suite2.md | cut -c1-250
