#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run M8 (one H100, nvidia-h100-x1, the session's last call): every GPU test after the two count
# expectations that run M7 found stale (the compute-capability query at a compressed fatbin's
# first load), and the 301-kernel module's first call against stock behaviour once more.
# Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
timeout 80 python3 -m pytest -q -rf tests/gpu/ > $O/pytest-gpu.log 2>&1
timeout 100 python3 benchmarks/first_call.py --out /tmp/fc --rounds 10 --n 200 --reps 3 > $O/first_call.log 2>&1
cat /tmp/fc/*.md > $O/first_call.md 2>/dev/null
tail -4 $O/pytest-gpu.log; head -12 $O/first_call.md
