#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# One device call, run L2 on the H100: the allocating async step traced (600 steps, host spans),
# each entry point's calls split by the counters they changed (benchmarks/trace/call_spans.py
# --by-counters): this library, the tree before issue 19 and this library without clearing
# (MGPU_CACHED_ALLOCATOR_ZERO=0), LLVM 19 and 22; the counters at exit of the library's runs (the
# preloaded tree and the linked library would both write the file). Carry `.whl`, `.gpu`.
set -u
. benchmarks/neighbour/setup_h100.sh
B=$R/.gpu/base/libmgpu_cached.so
LIB=$(python3 -m mgpu_cached --libdir)
SPLIT=mgpuLaunchKernel,mgpuStreamCreate,mgpuStreamDestroy,mgpuMemAlloc,mgpuMemFree,mgpuStreamSynchronize
for V in 19 22; do
  cc -std=c11 -D_GNU_SOURCE -O2 -DPROG_ASYNC -Ibenchmarks/harness -o /tmp/async$V benchmarks/harness/harness.c \
    tests/data/mlir/async_step_llvm$V.o -L"$LIB" -lmgpu_cached -Wl,-rpath,"$LIB" -lm || exit 1
  MGPU_CACHED_STATS_FILE=$O/stats_cached$V.txt MGPU_CACHED_TRACE=/tmp/cur$V.json /tmp/async$V 600 1 10 > /dev/null
  LD_PRELOAD=$B MGPU_CACHED_TRACE=/tmp/base$V.json /tmp/async$V 600 1 10 > /dev/null
  MGPU_CACHED_ALLOCATOR_ZERO=0 MGPU_CACHED_STATS_FILE=$O/stats_zero0_$V.txt MGPU_CACHED_TRACE=/tmp/z$V.json /tmp/async$V 600 1 10 > /dev/null
  echo "== LLVM $V: traced 600 steps (host spans)"
  python3 benchmarks/trace/call_spans.py --skip 50 --by-counters $SPLIT cached=/tmp/cur$V.json \
    before-391bd88=/tmp/base$V.json zero0=/tmp/z$V.json
done > $O/call_spans.md 2>&1
cat $O/call_spans.md
for f in $O/stats_*.txt; do echo "== $f"; grep -E "graph|stream|alloc_(hits|misses|reclaims)" $f | tr -s ' ' | tr '\n' ';'; echo; done
