#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N69 (one H100, nvidia-h100-x1): issue 21 items 2 and 5 on this session's final C code (bare
# launches): chain replay against the hand-made graph (K = 10 and 100, LLVM 22, 19 and 19exe)
# with this library and with the session's starting tree 6f88077 preloaded; the first call of the
# 301-kernel module call by call and beside the starting tree (10 processes per cell).
# Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
chains_now_start 22,19,19exe
for t in now start; do cut -c1-200 $O/chains_$t.md | tail -7; done
first_call_checks 12 10
