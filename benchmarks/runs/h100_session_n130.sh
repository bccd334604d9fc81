#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N130 (one H100, nvidia-h100-x1): issue 21 item 2 with the session's final C code (bare chain
# replay, the kept stream, the sparse entry points' flush). Every GPU test with the graph path on
# and off; chain_split_probe now / start (0052a8d's C code, .gpu/start-src), K = 10 and 100, 16
# rounds (with the heap shape against the executable shape plus its comparisons); then
# benchmarks/chains.py (the issue's benchmark), K = 10 and 100, 10 rounds. Carry `.gpu` and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
gpu_tests_on_off 150
cat $O/pytest-gpu.log
chain_split_build || exit 1
chain_split_rounds 16 "10 100" | tail -30
timeout 280 python3 benchmarks/chains.py --out /tmp/ch --k 10,100 --llvm 22,19,19exe --rounds 10 --reps 3 \
  --launches 3000 > /tmp/chains.log 2>&1; echo "rc=$?" >> /tmp/chains.log
cp /tmp/ch/chains.md /tmp/ch/chains.json $O/ 2>/dev/null; tail -1 /tmp/chains.log
python3 benchmarks/paired.py --chains $O/chains.json > $O/chains_paired.txt 2>&1; cat $O/chains_paired.txt | cut -c1-220
