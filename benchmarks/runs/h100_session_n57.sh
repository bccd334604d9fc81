#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N57 (one H100, nvidia-h100-x1): commit 7b4086d's C code (one thread-local look-up per call on
# the launch paths; LLVM >= 21 look-ups from the thread's entry; chain loads owe their context
# check; handle tables in doubling chunks): every GPU test; review 2's gpu_exp.c (G1-G12) and
# PyTorch in the same process; chain replay against the hand-made graph beside this session's
# starting tree fcecbe0; the README's synchronous rows (12 rounds) beside the tree before issue 19
# and the starting tree. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
. benchmarks/runs/neighbour_checks.sh
gpu_tests 120
review2_and_torch
neighbour_summary
for t in now start; do
  pre=""; [ $t = start ] && pre=$S
  LD_PRELOAD=$pre timeout 170 python3 benchmarks/chains.py --out /tmp/ch_$t --k 10,100 --llvm 22,19,19exe \
    --rounds 3 --reps 3 --launches 3000 > $O/chains_$t.log 2>&1; echo "rc=$?" >> $O/chains_$t.log
  cp /tmp/ch_$t/chains.md $O/chains_$t.md; cp /tmp/ch_$t/chains.json $O/chains_$t.json 2>/dev/null
  cat $O/chains_$t.md | cut -c1-200 | tail -6; tail -1 $O/chains_$t.log
done
ROUNDS=12 side_by_side sync_rows 240 empty,stencil,large \
  --config before-391bd88:LD_PRELOAD=$B --config start-fcecbe0:LD_PRELOAD=$S
