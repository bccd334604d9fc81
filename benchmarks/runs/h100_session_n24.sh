#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N24 (one H100, nvidia-h100-x1): after the reclaimer's wake-up outside the lock and the one-lock
# stream free: every GPU test; the allocating async step and the step with buffers made once,
# 8 rounds, beside the tree before issue 19 and this session's starting tree (as run N22).
# Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
gpu_tests 100
side_by_side async_ab 420 async,async_prealloc --config before-391bd88:LD_PRELOAD=$B \
  --config start-3212cac:LD_PRELOAD=$S
