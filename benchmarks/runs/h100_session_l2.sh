#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# One device call, run L2 on the H100: the allocating async step traced (600 steps, host spans),
# each entry point's calls split by the counters they changed (benchmarks/trace/call_spans.py
# --by-counters): this library, the tree before issue 19 and this library without clearing
# (MGPU_CACHED_ALLOCATOR_ZERO=0), LLVM 19 and 22; the counters at exit of the library's runs (the
# preloaded tree and the linked library would both write the file). Carry `.whl`, `.gpu`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/async_step.sh
async_bins || exit 1
for V in 19 22; do
  async_trace $V cached MGPU_CACHED_STATS_FILE=$O/stats_cached$V.txt
  async_trace $V before-391bd88 LD_PRELOAD=$B
  async_trace $V zero0 MGPU_CACHED_ALLOCATOR_ZERO=0 MGPU_CACHED_STATS_FILE=$O/stats_zero0_$V.txt
  echo "== LLVM $V: traced 600 steps (host spans)"
  async_spans $V "--by-counters $SPLIT" cached before-391bd88 zero0
done > $O/call_spans.md 2>&1
cat $O/call_spans.md
stats_show graph stream alloc_hits alloc_misses alloc_reclaims
