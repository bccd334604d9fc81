#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N106 (one H100, nvidia-h100-x1): issue 21 item 2 with more rounds on this session's final C
# code: chains of 10 and 100 launches, LLVM 22, 19exe (the blob in the executable, AOT code) and
# 19 (the blob on the heap, the JIT runner's shape), 15 rounds; per-round ratios to the hand-made
# graph and to the program without chain replay (benchmarks/paired.py --chains). Carry `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
timeout 560 python3 benchmarks/chains.py --out /tmp/ch --k 10,100 --llvm 22,19exe,19 --rounds 15 --reps 3 \
  --launches 3000 > /tmp/chains.log 2>&1; echo "rc=$?" >> /tmp/chains.log
cp /tmp/ch/chains.md /tmp/ch/chains.json $O/ 2>/dev/null; tail -1 /tmp/chains.log
python3 benchmarks/paired.py --chains $O/chains.json > $O/chains_paired.txt 2>&1
cat $O/chains_paired.txt
