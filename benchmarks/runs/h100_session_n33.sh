#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N33 (one H100, nvidia-h100-x1): the reclaimer watches for frees MGPU_CACHED_ALLOCATOR_SPIN_US
# (default 50) after a round before it sleeps, so a loop's frees pay no wake-up. Side by side, 10
# rounds: the library, the same with SPIN_US=0 (asleep at once, as before), the tree before issue
# 19 and this session's starting tree; the library's counters over 600 steps. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
. benchmarks/runs/async_step.sh
ROUNDS=10 side_by_side async_ab 480 async,async_prealloc --config spin0:MGPU_CACHED_ALLOCATOR_SPIN_US=0 \
  --config before-391bd88:LD_PRELOAD=$B --config start-1de36e5:LD_PRELOAD=$S
async_bins && for v in 19 22; do
  MGPU_CACHED_STATS_FILE=$O/stats_cached$v.txt /tmp/async$v 600 1 10 > /dev/null
  MGPU_CACHED_ALLOCATOR_SPIN_US=0 MGPU_CACHED_STATS_FILE=$O/stats_spin0_$v.txt /tmp/async$v 600 1 10 > /dev/null
done
stats_show alloc_reclaim alloc_fence stream_fence graph_updates alloc_misses
