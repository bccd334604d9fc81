#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N120 (one H100, nvidia-h100-x1): issue 21 item 2, the head start (chain.c: after a chain of
# at least 32 launches on a stream, the next chain's first 16 launches are submitted at its 16th).
# The GPU's chain tests, then chain_split_probe with this library ("now") and the session's
# starting tree (df12b1e = 7049d25's C code, .gpu/start-src, preloaded: "start"), chain replay
# on, K = 10, 20, 40 and 100, the LLVM 22 shape, the LLVM <= 20 shape with the blob in the
# executable and on the heap, and the hand-made graph; 12 rounds interleaved; tables by
# benchmarks/chain_split_table.py. Carry `.gpu` and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
timeout 120 python3 -m pytest -q -rf --tb=short tests/gpu/test_gpu.py -k chain > $O/pytest-gpu-chain.log 2>&1
tail -3 $O/pytest-gpu-chain.log
chain_split_build || exit 1
chain_split_rounds 12 "10 20 40 100"
