#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# One device call, run L10 on the H100: the async rows with the stream's graph execs at 8 (the
# default), 16 and 32 (MGPU_CACHED_GRAPH_EXECS: a kernel may now take its share of them
# with repeated argument sets) next to the tree before issue 19; the counters of one untraced run
# each; the GPU tests first.
# Carry `.whl`, `.gpu`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/async_step.sh
timeout 90 python3 -m pytest -q -rf tests/gpu/ 2>&1 | tail -3 > $O/pytest-gpu.log; cat $O/pytest-gpu.log
async_suite 5 --config execs16:MGPU_CACHED_GRAPH_EXECS=16 --config execs32:MGPU_CACHED_GRAPH_EXECS=32 \
  --config before-391bd88:LD_PRELOAD=$B
async_bins || exit 1
async_execs_stats
stats_show graph_up graph_inst stream_fence
