#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N122 (one H100, nvidia-h100-x1): the session's final C code (chain replay's head start with
# doubling parts). PART=A: every GPU test with the graph path on and off, then chain_split_probe
# now / start (df12b1e = 7049d25's C code, .gpu/start-src, preloaded), K = 10 and 100, 8 rounds.
# PART=B: benchmarks/chains.py, K = 10 and 100, LLVM 22, 19 (heap) and 19exe, 8 rounds, per-round
# ratios (benchmarks/paired.py --chains). Carry `.gpu` and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
if [ "${PART:-A}" = A ]; then
  gpu_tests_on_off 200; cat $O/pytest-gpu.log
  chain_split_build || exit 1
  chain_split_rounds 8 "10 100"
else
  timeout 560 python3 benchmarks/chains.py --out /tmp/ch --k 10,100 --llvm 22,19,19exe --rounds 8 --reps 3 \
    --launches 3000 > /tmp/chains.log 2>&1; echo "rc=$?" >> /tmp/chains.log
  cp /tmp/ch/chains.md /tmp/ch/chains.json $O/ 2>/dev/null; tail -1 /tmp/chains.log
  python3 benchmarks/paired.py --chains $O/chains.json > $O/chains_paired.txt 2>&1; cat $O/chains.md $O/chains_paired.txt | cut -c1-220
fi
