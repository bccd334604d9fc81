#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# One device call, run L5 on the H100: the async rows after a kernel alone on its stream got an exec per repeated
# argument set (graph_launch.c, "Argument sets"), ready blocks went to address order and
# the reclaimer took over the periodic headroom check, side by side with the tree before issue 19
# (`before-391bd88`) and this session's starting tree (`start-16750f0`, .gpu/start-src); the same
# step traced per tree with each kernel's stream and argument stability (call_spans.py
# --rotation). Carry `.whl`, `.gpu`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/async_step.sh
async_suite 6 --config before-391bd88:LD_PRELOAD=$B --config start-16750f0:LD_PRELOAD=$S
async_bins || exit 1
async_three_trees "--rotation --by-counters $SPLIT"
stats_show graph_ alloc_head alloc_hits alloc_miss stream_fence
