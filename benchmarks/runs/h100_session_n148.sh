#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N148 (one H100, nvidia-h100-x1, a fresh machine): run N147 again with more processes, the
# session's final C code beside its starting tree (.gpu/start-src): chain_pair_probe.c with each
# shape taking each stream in turn, K = 10 and 100, 9 processes each. Carry `.gpu` and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
chain_split_build || exit 1
chain_pair_build || exit 1
chain_pair_rounds 9
