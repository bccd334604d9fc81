#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N146 (one H100, nvidia-h100-x1): run N145 found the heap shape's synchronisation 0.37-0.39 µs
# dearer than the exe shape's, with its hits compared or not (nocmp). chain_pair_probe.c now also
# times the synchronisation of the LLVM 22 shape's kernel (the heap blob's module) and of the exe
# blob's kernel launched alone, and of the exe shape once a load holds its module (as the setup's
# load holds the heap blob's). This tree and nocmp, K = 10, 6 processes each. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
chain_split_build || exit 1
chain_pair_build || exit 1
variant_pair_rounds 6 30 "now nocmp" || exit 1
