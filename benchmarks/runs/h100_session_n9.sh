#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N9 (one H100, nvidia-h100-x1): the synchronous rows (empty, stencil, large; LLVM 19 and 22)
# with the tree before the exec thresholds (b1bf448) and the final tree, both built alike and
# preloaded (.gpu/bisect/<commit>/csrc, carried), 8 rounds: whether moving the early launches'
# state out of the launch path's statics gave run N6's 0.1-0.15 us back. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
CFG="--config start-ac0760c:LD_PRELOAD=$S$(bisect_configs)"
side_by_side steady_ab 400 empty,stencil,large $CFG
