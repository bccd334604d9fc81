#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N115 (one H100, nvidia-h100-x1): issue 21 item 2 after this session's module-cache changes
# (the thread-cache paths shortened: 65 fewer library instructions per LLVM <= 20 link against the
# fake driver). chain_split_probe with this library ("now") and the session's starting tree
# (b704321, .gpu/start-src, preloaded: "start"), chain replay on, K = 10 and 100, the LLVM 22
# shape, the LLVM <= 20 shape with the blob in the executable and on the heap, and the hand-made
# graph; 16 rounds interleaved; tables by benchmarks/chain_split_table.py (the rounds of the
# fast and the slow host apart). Carry `.gpu` and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
chain_split_build || exit 1
chain_split_rounds 16 "10 100"
