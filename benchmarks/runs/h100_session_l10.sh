#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# One device call, run L10 on the H100: the async rows with the stream's graph execs at 8 (the
# default), 16 and 32 (MGPU_CACHED_GRAPH_EXECS: a kernel may now take its share of them
# with repeated argument sets) next to the tree before issue 19; the counters of one traced run
# each; the GPU tests first.
# Carry `.whl`, `.gpu`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
B=$R/.gpu/base/libmgpu_cached.so
timeout 90 python3 -m pytest -q -rf tests/gpu/ 2>&1 | tail -3 > $O/pytest-gpu.log; cat $O/pytest-gpu.log
timeout 200 python3 benchmarks/run.py --out /tmp/suite --programs async,async_prealloc \
  --llvm 19,22 --rounds 5 --reps 3 --scale 0.3 --skip stock,stock-named,preload \
  --config execs16:MGPU_CACHED_GRAPH_EXECS=16 --config execs32:MGPU_CACHED_GRAPH_EXECS=32 \
  --config before-391bd88:LD_PRELOAD=$B > /tmp/suite.log 2>&1
echo "suite rc=$?" >> /tmp/suite.log
{ grep -E "^\| " /tmp/suite/results.md | head -6; tail -2 /tmp/suite.log; } > $O/suite_async.md 2>&1
cp /tmp/suite/results.json $O/suite_async.json 2>/dev/null
cat $O/suite_async.md | cut -c1-300
LIB=$(python3 -m mgpu_cached --libdir)
for V in 19 22; do
  cc -std=c11 -D_GNU_SOURCE -O2 -DPROG_ASYNC -Ibenchmarks/harness -o /tmp/async$V benchmarks/harness/harness.c \
    tests/data/mlir/async_step_llvm$V.o -L"$LIB" -lmgpu_cached -Wl,-rpath,"$LIB" -lm || exit 1
  for X in 8 16 32; do
    MGPU_CACHED_GRAPH_EXECS=$X MGPU_CACHED_STATS_FILE=$O/stats_execs${X}_$V.txt /tmp/async$V 600 1 10 > /dev/null
  done
done
for f in $O/stats_*.txt; do echo "== $f"; python3 -c "import json,sys; d=json.load(open(sys.argv[1]))['stats']; print({k: v for k, v in d.items() if k.startswith(('graph_up', 'graph_inst', 'stream_fence'))})" $f; done
