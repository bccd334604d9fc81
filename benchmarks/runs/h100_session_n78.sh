#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N78 (one H100, nvidia-h100-x1): issue 21 item 6 for this session's C code (the launch path's
# look-ups inline): the README's rows (empty, stencil, large module, the async step and the step
# with buffers made once; LLVM 19 and 22) beside the session's starting tree 7e264ec preloaded,
# 6 rounds; with PART=B the synchronous rows alone, 16 rounds, on the same machine.
# Carry `.gpu` (start-src: 7e264ec's csrc), `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
if [ "${PART:-A}" = A ]; then
  ROUNDS=6 side_by_side rows_n78 480 empty,stencil,large,async,async_prealloc \
    --config start-7e264ec:LD_PRELOAD=$S
else
  ROUNDS=16 side_by_side sync16_n78 480 empty,stencil,large --config start-7e264ec:LD_PRELOAD=$S
fi
