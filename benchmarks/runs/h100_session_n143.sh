#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N143 (one H100, nvidia-h100-x1): why the library's heap-blob hit costs more in a chain than
# the same comparison made by the program (run N142: heap 1.163x the graph at K = 10, exe+same
# 1.120x, exe 1.095x). Experimental builds of this tree, each preloaded into chain_pair_probe.c
# (K = 10, 7 processes each, interleaved):
#   now      this tree;
#   whole    mc_blob_same compares the whole length in one call (no page loop);
#   aligned  module records allocated on whole 64-byte lines of their own;
#   nocmp    the heap hit not compared at all (unsafe; the floor of the heap shape's other work).
# Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
chain_split_build || exit 1
chain_pair_build || exit 1
variant_pair_rounds 7 40 "now whole aligned nocmp" || exit 1
