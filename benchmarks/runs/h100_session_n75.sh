#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N75 (one H100, nvidia-h100-x1), on 7e264ec's C code: the targets whose runs so far moved
# between met and not met, again with more processes. Chain replay (K = 10 / 100, LLVM 22, 19exe
# and 19, 12 rounds: each round a process per cell, whose state moved a K = 10 chain by ~2 us in
# run N72); the README's async rows beside the tree before issue 19 (20 rounds, issue 19's 3%
# rule); the first call of the 301-kernel module (30 processes per cell, as run N72).
# Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
LD_PRELOAD= timeout 250 python3 benchmarks/chains.py --out /tmp/ch --k 10,100 --llvm 22,19exe,19 \
  --rounds 12 --reps 3 --launches 3000 > $O/chains_n75.log 2>&1; echo "rc=$?" >> $O/chains_n75.log
cp /tmp/ch/chains.md $O/chains_n75.md; cp /tmp/ch/chains.json $O/chains_n75.json 2>/dev/null
cut -c1-220 $O/chains_n75.md | tail -8
ROUNDS=20 side_by_side async_n75 200 async,async_prealloc --config before-391bd88:LD_PRELOAD=$B
timeout 120 python3 benchmarks/first_call.py --out /tmp/fc --rounds 30 --n 200 --reps 3 \
  > $O/first_call_n75.log 2>&1; echo "rc=$?" >> $O/first_call_n75.log
cp /tmp/fc/first_call.md $O/first_call_n75.md 2>/dev/null; cat $O/first_call_n75.md
