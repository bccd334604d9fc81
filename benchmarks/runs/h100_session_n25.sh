#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N25 (one H100, nvidia-h100-x1): issue 21 item 2 on this stop's tree, not measured since run M5:
# chains of 10 / 100 launches + one sync against the hand-made graph, LLVM 22, LLVM 19 (heap blob)
# and LLVM 19 with the blob in .rodata (benchmarks/chains.py), 3 rounds. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
timeout 150 python3 benchmarks/chains.py --out /tmp/ch --k 10,100 --llvm 22,19,19ro --rounds 3 --reps 3 \
  --launches 3000 > $O/chains.log 2>&1; echo "rc=$?" >> $O/chains.log
cp /tmp/ch/chains.md /tmp/ch/chains.json $O/ 2>/dev/null; cat $O/chains.md; tail -2 $O/chains.log
