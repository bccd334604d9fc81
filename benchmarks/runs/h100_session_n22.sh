#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N22 (one H100, nvidia-h100-x1): issue 19's 3% rule with more rounds than run N21's README
# suite (3): the allocating async step, the step with buffers made once and the empty kernel,
# LLVM 19 and 22, 8 rounds, beside the tree before issue 19 (before-391bd88) and this session's
# starting tree (start-3212cac), both preloaded. Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
side_by_side async_ab 420 async,async_prealloc,empty --config before-391bd88:LD_PRELOAD=$B \
  --config start-3212cac:LD_PRELOAD=$S
