#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N6 (one H100, nvidia-h100-x1): where run N5's 2-3% slower steady launches (empty, large;
# cached against the starting tree preloaded) come from: every commit since the session's start
# (.gpu/bisect/<commit>/csrc, carried) built exactly as the starting tree is (setup_h100.sh's
# flags) and preloaded side by side, 8 rounds. Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
CFG="--config start-ac0760c:LD_PRELOAD=$S$(bisect_configs)"
side_by_side bisect 400 empty,large $CFG
