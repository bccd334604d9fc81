#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N55 (one H100, nvidia-h100-x1): this session's C code (handle tables in doubling chunks; a
# module load owes its context check while chain-replay launches are pending): chain replay
# against the hand-made graph (LLVM 22, 19, 19 with the blob in the executable) with this library
# and with this session's starting tree fcecbe0 preloaded (chains_start.md); the first call of the
# 301-kernel module call by call and beside stock behaviour and the starting tree. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
for t in now start; do
  pre=""; [ $t = start ] && pre=$S
  LD_PRELOAD=$pre timeout 170 python3 benchmarks/chains.py --out /tmp/ch_$t --k 10,100 --llvm 22,19,19exe \
    --rounds 3 --reps 3 --launches 3000 > $O/chains_$t.log 2>&1; echo "rc=$?" >> $O/chains_$t.log
  cp /tmp/ch_$t/chains.md $O/chains_$t.md; cp /tmp/ch_$t/chains.json $O/chains_$t.json 2>/dev/null
  cat $O/chains_$t.md | cut -c1-200; tail -1 $O/chains_$t.log
done
first_call_checks 12 10
