#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# One device call, run L4 on the H100: does the reclaimer's spinning wait slow the program's calls?
# The async rows with this library, its attribution copy whose reclaimer waits block
# (attribution_variants.py: blocking), the tree before issue 19 and this session's starting tree;
# then the step traced with each of the first two, with how stable each kernel's stream and
# arguments are (call_spans.py --rotation). Carry `.whl`, `.gpu`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
B=$R/.gpu/base/libmgpu_cached.so; S=$R/.gpu/start/libmgpu_cached.so
CF="-O2 -std=c11 -D_GNU_SOURCE -fPIC -fvisibility=hidden -shared -pthread -Wl,-z,nodelete"
python3 benchmarks/neighbour/attribution_variants.py csrc /tmp/av || exit 1
cc $CF -I/tmp/av/blocking/csrc $(find /tmp/av/blocking/csrc -name "*.c") -o /tmp/av/blocking.so -ldl || exit 1
timeout 300 python3 benchmarks/run.py --out /tmp/suite --programs async,async_prealloc \
  --llvm 19,22 --rounds 5 --reps 3 --scale 0.3 --skip stock,stock-named,preload \
  --config blocking:LD_PRELOAD=/tmp/av/blocking.so --config before-391bd88:LD_PRELOAD=$B \
  --config start-16750f0:LD_PRELOAD=$S > /tmp/suite.log 2>&1
echo "suite rc=$?" >> /tmp/suite.log
{ grep -E "^\| " /tmp/suite/results.md | head -6; tail -2 /tmp/suite.log; } > $O/suite_async.md 2>&1
cp /tmp/suite/results.json $O/suite_async.json 2>/dev/null
cat $O/suite_async.md | cut -c1-300
LIB=$(python3 -m mgpu_cached --libdir)
SPLIT=mgpuLaunchKernel,mgpuStreamCreate,mgpuStreamDestroy,mgpuMemAlloc,mgpuMemFree,mgpuStreamSynchronize
for V in 19 22; do
  cc -std=c11 -D_GNU_SOURCE -O2 -DPROG_ASYNC -Ibenchmarks/harness -o /tmp/async$V benchmarks/harness/harness.c \
    tests/data/mlir/async_step_llvm$V.o -L"$LIB" -lmgpu_cached -Wl,-rpath,"$LIB" -lm || exit 1
  MGPU_CACHED_TRACE=/tmp/cur$V.json /tmp/async$V 600 1 10 > /dev/null
  LD_PRELOAD=/tmp/av/blocking.so MGPU_CACHED_TRACE=/tmp/blk$V.json /tmp/async$V 600 1 10 > /dev/null
  echo "== LLVM $V: traced 600 steps (host spans)"
  python3 benchmarks/trace/call_spans.py --skip 50 --rotation --by-counters $SPLIT cached=/tmp/cur$V.json \
    blocking=/tmp/blk$V.json
done > $O/call_spans.md 2>&1
cat $O/call_spans.md | grep -E "Launch|step|inside|Sync|==|Free|allocation"
