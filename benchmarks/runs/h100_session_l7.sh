#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# One device call, run L7 on the H100: the async rows after the allocator's fence also proves the given-back
# streams idle (pool.h, mc_pool_parked_idle), on top of run L5's changes (a kernel alone on its
# stream gets an exec per repeated
# argument set (graph_launch.c, "Argument sets"), ready blocks went to address order and
# the reclaimer took over the periodic headroom check, side by side with the tree before issue 19
# (`before-391bd88`) and this session's starting tree (`start-16750f0`, .gpu/start-src); the same
# step traced per tree with each kernel's stream and argument stability (call_spans.py
# --rotation). Carry `.whl`, `.gpu`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
B=$R/.gpu/base/libmgpu_cached.so; S=$R/.gpu/start/libmgpu_cached.so
timeout 300 python3 benchmarks/run.py --out /tmp/suite --programs async,async_prealloc \
  --llvm 19,22 --rounds 6 --reps 3 --scale 0.3 --skip stock,stock-named,preload \
  --config before-391bd88:LD_PRELOAD=$B --config start-16750f0:LD_PRELOAD=$S > /tmp/suite.log 2>&1
echo "suite rc=$?" >> /tmp/suite.log
{ grep -E "^\| " /tmp/suite/results.md | head -6; tail -2 /tmp/suite.log; } > $O/suite_async.md 2>&1
cp /tmp/suite/results.json $O/suite_async.json 2>/dev/null
cat $O/suite_async.md | cut -c1-300
LIB=$(python3 -m mgpu_cached --libdir)
SPLIT=mgpuLaunchKernel,mgpuStreamCreate,mgpuStreamDestroy,mgpuMemAlloc,mgpuMemFree,mgpuStreamSynchronize
for V in 19 22; do
  cc -std=c11 -D_GNU_SOURCE -O2 -DPROG_ASYNC -Ibenchmarks/harness -o /tmp/async$V benchmarks/harness/harness.c \
    tests/data/mlir/async_step_llvm$V.o -L"$LIB" -lmgpu_cached -Wl,-rpath,"$LIB" -lm || exit 1
  MGPU_CACHED_STATS_FILE=$O/stats_cached$V.txt MGPU_CACHED_TRACE=/tmp/cur$V.json /tmp/async$V 600 1 10 > /dev/null
  LD_PRELOAD=$B MGPU_CACHED_TRACE=/tmp/base$V.json /tmp/async$V 600 1 10 > /dev/null
  LD_PRELOAD=$S MGPU_CACHED_TRACE=/tmp/start$V.json /tmp/async$V 600 1 10 > /dev/null
  echo "== LLVM $V: traced 600 steps (host spans)"
  python3 benchmarks/trace/call_spans.py --skip 50 --rotation --by-counters $SPLIT cached=/tmp/cur$V.json \
    before-391bd88=/tmp/base$V.json start-16750f0=/tmp/start$V.json
done > $O/call_spans.md 2>&1
cat $O/call_spans.md | grep -E "Launch|step|inside|Sync|==|Free|allocation"
for f in $O/stats_*.txt; do echo "== $f"; python3 -c "import json,sys; d=json.load(open(sys.argv[1]))['stats']; print({k: v for k, v in d.items() if k.startswith(('graph_', 'alloc_head', 'alloc_hits', 'alloc_miss', 'stream_fence'))})" $f; done
