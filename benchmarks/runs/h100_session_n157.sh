#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N157 (one H100, nvidia-h100-x1): runs N155 and N156 again on another machine, 16 processes per tree:
# the session's final C code (chain replay's lock an mc_lock) against its starting tree
# (.gpu/start-src, 822b6db), chain_pair_probe.c, streams rotated, K = 10 and 100. Carry `.gpu`
# and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
grep -m1 "model name" /proc/cpuinfo > $O/cpu.txt
chain_split_build || exit 1
chain_pair_build || exit 1
chain_pair_rounds 16
