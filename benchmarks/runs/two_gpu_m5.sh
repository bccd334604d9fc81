#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run M5 (two GPUs, nvidia-h100-x2, right after M4): the final library's neighbour checks (review
# 2's G1-G12 stock and cached side by side, PyTorch in the same process, the differential
# tester's module-globals, capture and tight classes on device 0) and chains of 10 / 100 launches
# in the LLVM 22, 19 and 19ro shapes. Carry `.gpu`, `.whl`. `sh benchmarks/runs/two_gpu_m5.sh`;
# logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/neighbour_checks.sh
review2_and_torch || exit 1
for c in modglobal capture; do difftest $c 50 --profile ordered --classes $c --programs 400 --seed 73; done
export DIFFTEST_MARGIN_MB=16
difftest tight_ordered 50 --profile ordered --classes pressure --programs 150 --seed 79
unset DIFFTEST_MARGIN_MB
timeout 100 python3 benchmarks/chains.py --out /tmp/ch --k 10,100 --llvm 22,19,19ro --rounds 3 --reps 3 --launches 3000 > $O/chains.log 2>&1
cp /tmp/ch/chains.md $O/ 2>/dev/null
neighbour_summary; grep -E "^\| " $O/chains.md
