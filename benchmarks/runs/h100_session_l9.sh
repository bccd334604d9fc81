#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# One device call, run L9 on the H100: the async rows with the stream's graph execs at 8 (the
# default), 16 and 32 (MGPU_CACHED_GRAPH_EXECS: a kernel alone on its stream may now fill them
# with repeated argument sets) next to the tree before issue 19; the counters of one untraced run
# each; then the differential tester's sticky-error class (run L8b ran out of time before it).
# Carry `.whl`, `.gpu`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/async_step.sh
async_suite 5 --config execs16:MGPU_CACHED_GRAPH_EXECS=16 --config execs32:MGPU_CACHED_GRAPH_EXECS=32 \
  --config before-391bd88:LD_PRELOAD=$B
async_bins || exit 1
async_execs_stats
stats_show graph_up graph_inst stream_fence
timeout 150 python3 tests/difftest/difftest.py --timeout 20 --profile ordered --classes sticky --programs 150 \
  --seed 19 --minimise 1 --minimise-budget 10 --out /tmp/dt-sticky > $O/difftest_sticky.txt 2>&1
grep -h '"differences"' $O/difftest_sticky.txt | cut -c1-160
