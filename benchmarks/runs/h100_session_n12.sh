#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N12 (one H100, nvidia-h100-x1): is the final tree's ~0.1 us per synchronous launch against
# b1bf448 (runs N8, N9, N11) the configuration table's two new entries (a layout effect) or the
# launch path's code? Built alike and preloaded (.gpu/bisect/*, carried): b1bf448; b1bf448 with the
# two entries added (unused); the final tree; the final tree without them (the defaults as
# constants). The synchronous rows, 8 rounds. Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
CFG="$(bisect_configs)"
side_by_side layout_ab 400 empty,stencil,large $CFG
