#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N36 (one H100, nvidia-h100-x1): the allocating async step only, 20 rounds, the library (HEAD)
# beside this session's starting tree and the tree before issue 19: run N35's cells spread 30-42 us
# within one runtime, so more rounds of fewer columns. Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
ROUNDS=20 side_by_side async_ab 540 async --config before-391bd88:LD_PRELOAD=$B \
  --config start-1de36e5:LD_PRELOAD=$S
