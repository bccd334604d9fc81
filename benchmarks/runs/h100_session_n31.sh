#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N31 (one H100, nvidia-h100-x1): the tree after runs N27-N30 (proof-clock fence, the
# synchronisation's poll age, nested relaxed brackets without a driver call): every GPU test; the
# allocating async step, the step with buffers made once and the empty kernel, 12 rounds, beside
# the tree before issue 19 and this session's starting tree. Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
gpu_tests 120
ROUNDS=12 side_by_side async_ab 440 async,async_prealloc,empty --config before-391bd88:LD_PRELOAD=$B \
  --config start-1de36e5:LD_PRELOAD=$S
