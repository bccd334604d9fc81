#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The H100 run of the trust round's final tree (run1.sh of the former h100-trust-final/): install,
# the review's exp0-4 in both modes, every GPU test, the differential tester (10,000 programs of each
# profile). Results: benchmarks/results/h100-review-exp/ and benchmarks/results/h100-difftest/.
# One device-tool call from the repository root, $OUT the folder to fill, wheels in .whl/.
set -u
O=$OUT
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation . > $O/install.log 2>&1 || { tail -20 $O/install.log; exit 1; }
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv > $O/device.txt 2>&1
L=$(python3 -c "import mgpu_cached;print(mgpu_cached.libdir())")
cc -O1 -o /tmp/g benchmarks/review/gpu_h100.c -I. -L$L -lmgpu_cached -Wl,-rpath,$L
{ for x in 0 1 2 3 4; do for d in 0 1; do printf '== exp%s MGPU_CACHED_DISABLE=%s   ' $x $d; MGPU_CACHED_DISABLE=$d timeout 60 /tmp/g $x 2>&1 | tr '\n' ' '; echo; done; done; } > $O/review-exp.txt 2>&1
timeout 300 python3 -m pytest -q -rs tests/gpu/ > $O/pytest-gpu.log 2>&1; echo "pytest rc=$?" >> $O/pytest-gpu.log
{ time timeout 120 python3 tests/difftest/difftest.py --programs 10000 --seed 1 --profile stock --timeout 20 --minimise 3 --minimise-budget 30 --out /tmp/dts ; } > $O/difftest-stock.txt 2>&1
{ time timeout 100 python3 tests/difftest/difftest.py --programs 10000 --seed 2 --profile ordered --timeout 20 --minimise 3 --minimise-budget 30 --out /tmp/dto ; } > $O/difftest-ordered.txt 2>&1
cp /tmp/dts/summary.json $O/difftest-stock-summary.json 2>/dev/null; cp /tmp/dto/summary.json $O/difftest-ordered-summary.json 2>/dev/null
tail -4 $O/pytest-gpu.log; grep -E "FAILED|ERROR" $O/pytest-gpu.log | head -20; cat $O/review-exp.txt; tail -3 $O/difftest-*.txt
