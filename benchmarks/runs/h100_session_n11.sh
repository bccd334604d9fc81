#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N11 (one H100, nvidia-h100-x1): the tree with fewer first-touch pages in the launch path:
# every GPU test; the first call call by call (page faults per call against run N10's); the
# synchronous rows with b1bf448 (before the exec thresholds) and this tree built alike and
# preloaded (.gpu/bisect/<commit>/csrc, carried), 8 rounds; the first call against the starting
# tree. Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
timeout 100 python3 -m pytest -q -rf --tb=short tests/gpu/ > $O/pytest-gpu.log 2>&1
tail -3 $O/pytest-gpu.log
timeout 100 sh benchmarks/first_call_stages/run.sh 12 > $O/first_call_stages.txt 2>&1; head -14 $O/first_call_stages.txt
CFG="--config start-ac0760c:LD_PRELOAD=$S$(bisect_configs)"
side_by_side steady_ab 330 empty,stencil,large $CFG
mkdir -p /tmp/sb && cp $S /tmp/sb/libmgpu_cached.so
timeout 100 python3 benchmarks/first_call.py --out /tmp/fc --rounds 10 --n 200 --reps 3 --before /tmp/sb > $O/first_call.log 2>&1
cat /tmp/fc/first_call.md > $O/first_call.md 2>/dev/null; cat $O/first_call.md
