#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N138 (one H100, nvidia-h100-x1): issue 21 item 2 within each process. chain_pair_probe.c
# runs the three shapes (LLVM 22; LLVM <= 20 with the blob in the executable; on the heap) and
# the hand-made graph in one process, in alternating blocks, with chain replay on: each shape's
# ratio to the graph blocks on either side of it, the median over rounds. K = 10 (200 chains a
# block, 40 rounds) and K = 100 (60 chains a block, 24 rounds); 7 processes each, this tree
# ("now") and the session's starting tree (.gpu/start-src, "start"), interleaved. Carry `.gpu`
# and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
chain_split_build || exit 1
chain_pair_build || exit 1
chain_pair_rounds 7
