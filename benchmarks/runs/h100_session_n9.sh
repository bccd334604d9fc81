#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N9 (one H100, nvidia-h100-x1): the synchronous rows (empty, stencil, large; LLVM 19 and 22)
# with the tree before the exec thresholds (b1bf448) and the final tree, both built alike and
# preloaded (.gpu/bisect/<commit>/csrc, carried), 8 rounds: whether moving the early launches'
# state out of the launch path's statics gave run N6's 0.1-0.15 us back. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
CFG="--config start-ac0760c:LD_PRELOAD=$S$(bisect_configs)"
timeout 400 python3 benchmarks/run.py --out /tmp/ab --programs empty,stencil,large --llvm 19,22 --rounds 8 \
  --reps 3 --scale 0.3 --skip stock,stock-named,preload $CFG > /tmp/ab.log 2>&1
echo "rc=$?" >> /tmp/ab.log; { sed -n 1,14p /tmp/ab/results.md; tail -2 /tmp/ab.log; } > $O/steady_ab.md 2>&1
cp /tmp/ab/results.json $O/steady_ab.json 2>/dev/null; cut -c1-400 $O/steady_ab.md
