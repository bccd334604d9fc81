#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# One device call, run L1 on the H100: where the allocating async step's cost against the tree
# before issue 19 goes. (1) the host cost of each driver call the library adds per step
# (benchmarks/harness/driver_calls.c); (2) the async rows side by side with the tree before issue 19
# and with attribution copies of this library that each drop one family of added calls
# (benchmarks/neighbour/attribution_variants.py: noverify, norelax, nocap, all3); (3) one traced
# run per tree and LLVM version, summarised per mgpu call (benchmarks/trace/call_spans.py).
# Carry `.whl`, `.gpu`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/async_step.sh
attribution_build noverify norelax nocap all3 || exit 1
driver_call_costs
async_suite 5 --config before-391bd88:LD_PRELOAD=$B --config noverify:LD_PRELOAD=/tmp/av/noverify.so \
  --config norelax:LD_PRELOAD=/tmp/av/norelax.so --config nocap:LD_PRELOAD=/tmp/av/nocap.so \
  --config all3:LD_PRELOAD=/tmp/av/all3.so
async_bins || exit 1
for V in 19 22; do
  async_trace $V cached
  async_trace $V before-391bd88 LD_PRELOAD=$B
  echo "== LLVM $V: traced 600 steps (host spans), the library vs the tree before issue 19"
  async_spans $V "" cached before-391bd88
done > $O/call_spans.md 2>&1
cat $O/call_spans.md
