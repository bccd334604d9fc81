#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run M2 (two GPUs, nvidia-h100-x2, right after M1): the differential tester's two-device class
# (module globals, memory pressure, another library's capture and threads mixed on two devices,
# 2000 programs) and the context-reset class (100 programs). Carry `.gpu`, `.whl`.
# `sh benchmarks/runs/two_gpu_m2.sh`; logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
timeout 480 bash tests/difftest/gpu_validate.sh /tmp/dt2 twodev > /dev/null 2>&1
cp /tmp/dt2/run.log $O/difftest_twodev.txt 2>/dev/null; cp /tmp/dt2/*-differences.txt $O/ 2>/dev/null
timeout 90 python3 tests/difftest/difftest.py --timeout 20 --profile ordered --classes reset --programs 100 \
  --seed 71 --minimise 1 --minimise-budget 10 --out /tmp/dt-reset > $O/difftest_reset.txt 2>&1
grep -E '"differences"|== |wall' $O/difftest_twodev.txt | cut -c1-200; grep -h '"differences"' $O/difftest_reset.txt
