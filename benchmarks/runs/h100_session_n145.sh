#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N145 (one H100, nvidia-h100-x1): run N144 found the heap shape's links 2..K costing what the
# exe shape's cost but for the comparison (nocmp: +1-2 ns a call), while its chains still cost
# 0.2-0.5 µs more: chain_pair_probe.c now times the first link's calls and the synchronisation
# apart too. This tree (the comparison's tail as masked loads with no branch) and run N143's nocmp
# build (benchmarks/runs/n143_patch.py), K = 10, 6 processes each, interleaved. Carry `.gpu`,
# `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
chain_split_build || exit 1
chain_pair_build || exit 1
variant_pair_rounds 6 30 "now nocmp" || exit 1
