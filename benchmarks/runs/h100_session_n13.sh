#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N13 (one H100, nvidia-h100-x1): run N12 put the final tree's ~0.1 us per synchronous launch
# on graph_launch.c's code, not on the configuration. Variants built alike and preloaded
# (.gpu/bisect/*, carried): b1bf448; the final tree; the final tree with the early-launch check
# not marked cold; both trees with every function aligned to 64 bytes (a folder holding ALIGN).
# The synchronous rows, 8 rounds. Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
CFG="$(bisect_configs)"
side_by_side variants_ab 450 empty,stencil,large $CFG
