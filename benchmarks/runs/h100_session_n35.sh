#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N35 (one H100, nvidia-h100-x1): which of this session's changes moves the allocating async
# step: side by side, 12 rounds, the library (HEAD), the same with MGPU_CACHED_POOL_POLL_FRESH=1,
# the proof-clock fence alone (.gpu/bisect/fence: commit 4f28bce), run N29's tree
# (.gpu/bisect/n29: commit 2c7a491), this session's starting tree and the tree before issue 19.
# Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
cfg=$(bisect_configs) || exit 1
# shellcheck disable=SC2086  # cfg is a word list
ROUNDS=12 side_by_side async_ab 540 async $cfg --config fresh:MGPU_CACHED_POOL_POLL_FRESH=1 \
  --config before-391bd88:LD_PRELOAD=$B --config start-1de36e5:LD_PRELOAD=$S
