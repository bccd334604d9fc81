#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N30: as run N29, after the fence-due rule (while blocks freed on a stream wait for the
# reclaimer, a synchronisation polls no given-back stream: the fence proves them). Run N29: a
# synchronisation polls only streams given back at least MGPU_CACHED_POOL_POLL_AGE_NS
# ago (default 2000): the allocating async step and the step with buffers made once, 8 rounds,
# with that default, with 0 (every given-back stream polled, as before), with tagged handles,
# beside the tree before issue 19 and this session's starting tree. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
side_by_side async_ab 500 async,async_prealloc --config age0:MGPU_CACHED_POOL_POLL_AGE_NS=0 \
  --config tagged:MGPU_CACHED_STREAM_HANDLES=tagged --config before-391bd88:LD_PRELOAD=$B \
  --config start-1de36e5:LD_PRELOAD=$S
