#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N23 (one H100, nvidia-h100-x1): what issue 19's handle guarantee (G6: mgpuStreamCreate returns
# a driver stream, so a given-back stream needs a cuStreamQuery before reuse) costs the allocating
# async step: this tree by default, the same tree with the opt-in library handles
# (MGPU_CACHED_STREAM_HANDLES=tagged, the handles the tree before issue 19 always had), and the tree
# before issue 19, 8 rounds. Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
side_by_side handles_ab 420 async,async_prealloc --config tagged:MGPU_CACHED_STREAM_HANDLES=tagged \
  --config before-391bd88:LD_PRELOAD=$B
