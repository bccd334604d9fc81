#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N27 (one H100, nvidia-h100-x1): the reclaimer's fence on the proof clock (no event on streams
# proven past the frees) with its waits and memsets on the round's own stream: every GPU test; the
# allocating async step and the step with buffers made once, 8 rounds, beside the tree before
# issue 19 and this session's starting tree (as runs N22, N24); the library's counters over 600
# steps of the allocating step (LLVM 19 and 22). Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
. benchmarks/runs/async_step.sh
gpu_tests 120
side_by_side async_ab 420 async,async_prealloc --config before-391bd88:LD_PRELOAD=$B \
  --config start-1de36e5:LD_PRELOAD=$S
async_bins && for v in 19 22; do
  MGPU_CACHED_STATS_FILE=$O/stats_cached$v.txt /tmp/async$v 600 1 10 > /dev/null
done
stats_show alloc_ graph_ stream_
