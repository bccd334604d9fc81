#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N142 (one H100, nvidia-h100-x1): where the heap shape's extra chain time goes. Run N141 put
# the 512-bit comparison (0.55x memcmp's time alone) on the GPU and the heap chain at K = 10 did not
# move (1.175 against start's 1.177). chain_pair_probe.c now also runs the exe shape with the
# comparison made by the program before each load (exe+memcmp, exe+same): K = 10 and 100, 7
# processes each, this tree and the session's starting tree (.gpu/start-src). Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
chain_split_build || exit 1
chain_pair_build || exit 1
chain_pair_rounds 7
