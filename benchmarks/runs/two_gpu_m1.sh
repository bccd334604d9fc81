#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run M1 (two GPUs, nvidia-h100-x2): the session's starting tree (after the review mends, which had
# run on the CPU only). Every GPU test with the graph path on and off (the two-GPU tests run here)
# and objects staying on their device, then review 2's G1-G12, PyTorch in the same process and
# the differential tester's tight, capture and threads classes on device 0. Carry `.gpu`, `.whl`.
# `sh benchmarks/runs/two_gpu_m1.sh`; logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/neighbour_checks.sh
OUT=$O sh benchmarks/runs/h200x2_gpu_tests.sh > /dev/null 2>&1
cat $O/device.txt; tail -3 $O/pytest-gpu.log; grep -c "exit 0" $O/two-gpu.txt
review2_and_torch || exit 1
export DIFFTEST_MARGIN_MB=16
for p in stock ordered; do difftest tight_$p 60 --profile $p --classes pressure --programs 200 --seed 61; done
unset DIFFTEST_MARGIN_MB
for c in capture threads; do difftest $c 70 --profile ordered --classes $c --programs 600 --seed 67; done
neighbour_summary
