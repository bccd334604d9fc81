#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# One device call, run K5 on the H100: where the allocating async step's cost against the tree
# before issue 19 comes from: the final tree with the graph path off (MGPU_CACHED_GRAPH=0), with
# no clearing (MGPU_CACHED_ALLOCATOR_ZERO=0), and both trees before, side by side. Carry `.whl`,
# `.gpu`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
B=$R/.gpu/base/libmgpu_cached.so; S=$R/.gpu/start/libmgpu_cached.so
timeout 240 python3 benchmarks/run.py --out /tmp/suite --programs async,async_prealloc \
  --llvm 19,22 --rounds 3 --reps 3 --scale 0.3 --skip stock,stock-named,preload \
  --config graph0:MGPU_CACHED_GRAPH=0 --config zero0:MGPU_CACHED_ALLOCATOR_ZERO=0 \
  --config before-391bd88:LD_PRELOAD=$B --config before-graph0:LD_PRELOAD=$B,MGPU_CACHED_GRAPH=0 \
  --config start-d234ea0:LD_PRELOAD=$S > /tmp/suite.log 2>&1
echo "suite rc=$?" >> /tmp/suite.log
{ grep -E "^\| " /tmp/suite/results.md | head -6; tail -2 /tmp/suite.log; } > $O/suite_async.md 2>&1
cp /tmp/suite/results.json $O/suite_async.json 2>/dev/null
cat $O/suite_async.md | cut -c1-330
