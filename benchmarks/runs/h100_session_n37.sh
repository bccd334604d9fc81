#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N37 (one H100, nvidia-h100-x1): the reclaimer back as in this session's starting tree (run
# N36: the proof-clock fence on its own stream made the allocating step slower), keeping the
# synchronisation that leaves the stream just given back to a later one, nested relaxed brackets
# without a driver call and the inline configuration: every GPU test; the allocating async step,
# 16 rounds, and the step with buffers made once and the empty kernel, beside this session's
# starting tree and the tree before issue 19. Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
gpu_tests 110
ROUNDS=16 side_by_side async_ab 420 async,async_prealloc,empty --config before-391bd88:LD_PRELOAD=$B \
  --config start-1de36e5:LD_PRELOAD=$S
