#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N51 (one H100, nvidia-h100-x1): runs N44, N45 and N50 put the stencil 2-8% slower than the
# session's starting tree in most cells. The synchronous rows (stencil, empty; LLVM 19 and 22), 16
# rounds, beside the starting tree (e243408) and this session's commits, each built as the
# compared trees are (.gpu/bisect/<commit>, carried): 6a5acda (the graph gate open to two
# threads), 167a953 (the look-up entry), 4a68138 (the allocator's records), 35d489f (the final C
# code: the same sources as the installed library, built the other way). Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
CFG="--config start-e243408:LD_PRELOAD=$S$(bisect_configs)"
ROUNDS=16 side_by_side stencil_bisect 480 stencil,empty $CFG
