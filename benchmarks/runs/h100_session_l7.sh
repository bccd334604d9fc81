#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# One device call, run L7 on the H100: the async rows after the allocator's fence also proves the given-back
# streams idle (pool.h, mc_pool_parked_idle), on top of run L5's changes (a kernel alone on its
# stream gets an exec per repeated
# argument set (graph_launch.c, "Argument sets"), ready blocks went to address order and
# the reclaimer took over the periodic headroom check, side by side with the tree before issue 19
# (`before-391bd88`) and this session's starting tree (`start-16750f0`, .gpu/start-src); the same
# step traced per tree with each kernel's stream and argument stability (call_spans.py
# --rotation): run L5's script on this tree. Carry `.whl`, `.gpu`. Logs under $OUT.
exec sh benchmarks/runs/h100_session_l5.sh
