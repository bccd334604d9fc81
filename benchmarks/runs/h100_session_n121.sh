#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N121 (one H100, nvidia-h100-x1): issue 21 item 2, the head start with doubling parts
# (chain.c: after a chain of at least 32 launches on a stream, the next chain's first 16 launches
# are submitted at its 16th, each later part when it holds twice what went before: 32, 96, 128).
# The GPU's chain tests, then chain_split_probe with this library ("now") and the session's
# starting tree (df12b1e = 7049d25's C code, .gpu/start-src, preloaded: "start"), chain replay
# on, K = 10, 40 and 100, the LLVM 22 shape, the LLVM <= 20 shape with the blob in the
# executable and on the heap, and the hand-made graph; 12 rounds interleaved; tables by
# benchmarks/chain_split_table.py; then benchmarks/chains.py, 4 rounds. Carry `.gpu` and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
timeout 120 python3 -m pytest -q -rf --tb=short tests/gpu/test_gpu.py -k chain > $O/pytest-gpu-chain.log 2>&1
tail -3 $O/pytest-gpu-chain.log
chain_split_build || exit 1
export MGPU_CACHED_GRAPH=1 MGPU_CACHED_CHAIN=1 MGPU_CACHED_STREAM_HANDLES=tagged
chain_split_rounds 12 "10 40 100"
# benchmarks/chains.py (chain replay on and off, the hand-made graph), K = 10 and 100, 4 rounds
timeout 330 python3 benchmarks/chains.py --out /tmp/ch --k 10,100 --llvm 22,19,19exe --rounds 4 --reps 3 \
  --launches 3000 > /tmp/chains.log 2>&1; echo "rc=$?" >> /tmp/chains.log
cp /tmp/ch/chains.md /tmp/ch/chains.json $O/ 2>/dev/null; tail -1 /tmp/chains.log
python3 benchmarks/paired.py --chains $O/chains.json > $O/chains_paired.txt 2>&1; cat $O/chains.md $O/chains_paired.txt | cut -c1-220
