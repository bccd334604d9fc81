#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N144 (one H100, nvidia-h100-x1): where the heap shape's link time goes, call by call. Run
# N143 found the heap shape 0.2-0.5 µs a chain dearer than the exe shape even with its hit not
# compared (nocmp), which the development machine does not show. chain_pair_probe.c now times each
# call of a link (load, get, launch, unload) for the exe and heap shapes; run with this tree and
# run N143's experimental builds whole and nocmp (benchmarks/runs/n143_patch.py), K = 10, 6
# processes each, interleaved. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
chain_split_build || exit 1
chain_pair_build || exit 1
variant_pair_rounds 6 30 "now whole nocmp" || exit 1
