#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N149 (one H100, nvidia-h100-x1): the chains with the bound beside them. chain_pair_probe.c
# gained graph+same: the hand-made graph with the heap shape's K comparisons made before each
# launch (the driver's own cost for the chain plus the verification a verified cache makes at every
# hit on a heap blob). The session's final C code and its starting tree (.gpu/start-src), each
# shape taking each stream in turn, K = 10 and 100, 9 processes each. Carry `.gpu` and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
chain_split_build || exit 1
chain_pair_build || exit 1
chain_pair_rounds 9
