#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# One device call, run L4 on the H100: does the reclaimer's spinning wait slow the program's calls?
# The async rows with this library, its attribution copy whose reclaimer waits block
# (attribution_variants.py: blocking), the tree before issue 19 and this session's starting tree;
# then the step traced with each of the first two, with how stable each kernel's stream and
# arguments are (call_spans.py --rotation). Carry `.whl`, `.gpu`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/async_step.sh
attribution_build blocking || exit 1
async_suite 5 --config blocking:LD_PRELOAD=/tmp/av/blocking.so --config before-391bd88:LD_PRELOAD=$B \
  --config start-16750f0:LD_PRELOAD=$S
async_bins || exit 1
for V in 19 22; do
  async_trace $V cached
  async_trace $V blocking LD_PRELOAD=/tmp/av/blocking.so
  echo "== LLVM $V: traced 600 steps (host spans)"
  async_spans $V "--rotation --by-counters $SPLIT" cached blocking
done > $O/call_spans.md 2>&1
grep -E "Launch|step|inside|Sync|==|Free|allocation" $O/call_spans.md
