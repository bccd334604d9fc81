#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run M6 (two GPUs, nvidia-h100-x2): the two-GPU tests after their mend, and the 301-kernel
# module's first call with one GPU visible (CUDA_VISIBLE_DEVICES=0), against stock behaviour, to
# tell the one-GPU case (issue 21 item 5) from runs M3/M4's two-GPU one. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
timeout 100 python3 -m pytest -q -rf tests/gpu/test_concurrency_gpu.py > $O/pytest-two-gpu.log 2>&1
CUDA_VISIBLE_DEVICES=0 timeout 80 python3 benchmarks/first_call.py --out /tmp/fc --rounds 8 --n 200 --reps 3 > $O/first_call_one_gpu.log 2>&1
cat /tmp/fc/*.md > $O/first_call_one_gpu.md 2>/dev/null
tail -3 $O/pytest-two-gpu.log; head -12 $O/first_call_one_gpu.md
