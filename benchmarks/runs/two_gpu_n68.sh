#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N68 (two GPUs, nvidia-h100-x2 or nvidia-h200-x2): bare launches with two devices (a stream of
# device 1 launched on with no context current runs in device 1's context): every GPU test, the
# two-GPU ones included, with the graph path on and off; the differential tester's four classes
# mixed on two devices (600 programs). Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
gpu_tests_on_off 150
cat $O/pytest-gpu.log
timeout 240 python3 tests/difftest/difftest.py --timeout 20 --profile stock --devices 2 \
  --classes modglobal,pressure,capture,threads --programs 600 --seed 68 --minimise 1 \
  --minimise-budget 10 --out /tmp/dt-2dev > $O/difftest_twodev.txt 2>&1
echo "rc=$?" >> $O/difftest_twodev.txt; grep -h '"differences"' $O/difftest_twodev.txt | cut -c1-200
