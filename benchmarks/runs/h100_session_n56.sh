#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N56 (one H100, nvidia-h100-x1): commit cfbc585's C code (one thread-local look-up per call on
# the LLVM <= 20 launch path): chain replay against the hand-made graph with this library and with
# this session's starting tree fcecbe0 preloaded; the README's synchronous rows (empty, stencil,
# large; LLVM 19 and 22; 16 rounds) beside the tree before issue 19 and the starting tree.
# Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
for t in now start; do
  pre=""; [ $t = start ] && pre=$S
  LD_PRELOAD=$pre timeout 170 python3 benchmarks/chains.py --out /tmp/ch_$t --k 10,100 --llvm 22,19,19exe \
    --rounds 3 --reps 3 --launches 3000 > $O/chains_$t.log 2>&1; echo "rc=$?" >> $O/chains_$t.log
  cp /tmp/ch_$t/chains.md $O/chains_$t.md; cp /tmp/ch_$t/chains.json $O/chains_$t.json 2>/dev/null
  cat $O/chains_$t.md | cut -c1-200 | tail -6; tail -1 $O/chains_$t.log
done
ROUNDS=16 side_by_side sync_rows 300 empty,stencil,large \
  --config before-391bd88:LD_PRELOAD=$B --config start-fcecbe0:LD_PRELOAD=$S
