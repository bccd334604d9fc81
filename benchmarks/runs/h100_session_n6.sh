#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N6 (one H100, nvidia-h100-x1): where run N5's 2-3% slower steady launches (empty, large;
# cached against the starting tree preloaded) come from: every commit since the session's start
# (.gpu/bisect/<commit>/csrc, carried) built exactly as the starting tree is (setup_h100.sh's
# flags) and preloaded side by side, 8 rounds. Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
CFG="--config start-ac0760c:LD_PRELOAD=$S$(bisect_configs)"
timeout 400 python3 benchmarks/run.py --out /tmp/ab --programs empty,large --llvm 19,22 --rounds 8 \
  --reps 3 --scale 0.3 --skip stock,stock-named,preload $CFG > /tmp/ab.log 2>&1
echo "rc=$?" >> /tmp/ab.log; { sed -n 1,12p /tmp/ab/results.md; tail -2 /tmp/ab.log; } > $O/bisect.md 2>&1
cp /tmp/ab/results.json $O/bisect.json 2>/dev/null; cut -c1-400 $O/bisect.md
