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
B=$R/.gpu/base/libmgpu_cached.so
CF="-O2 -std=c11 -D_GNU_SOURCE -fPIC -fvisibility=hidden -shared -pthread -Wl,-z,nodelete"
python3 benchmarks/neighbour/attribution_variants.py csrc /tmp/av || exit 1
for v in noverify norelax nocap all3; do
  cc $CF -I/tmp/av/$v/csrc $(find /tmp/av/$v/csrc -name "*.c") -o /tmp/av/$v.so -ldl || exit 1
done
STUBS="-L/usr/local/cuda/lib64/stubs -lcuda"; [ -e /usr/local/cuda/lib64/stubs/libcuda.so ] || STUBS="-l:libcuda.so.1"
python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from run import extract_blob; \
open('/tmp/empty.fatbin', 'wb').write(extract_blob(open('tests/data/mlir/empty_loop_llvm22.o', 'rb').read()))"
cc -O2 -std=c11 -D_GNU_SOURCE -I/usr/local/cuda/include -Ibenchmarks/harness benchmarks/harness/driver_calls.c \
  -o /tmp/driver_calls $STUBS -lm && /tmp/driver_calls /tmp/empty.fatbin 20000 > $O/driver_calls.txt 2>&1
cat $O/driver_calls.txt
timeout 330 python3 benchmarks/run.py --out /tmp/suite --programs async,async_prealloc \
  --llvm 19,22 --rounds 5 --reps 3 --scale 0.3 --skip stock,stock-named,preload \
  --config before-391bd88:LD_PRELOAD=$B --config noverify:LD_PRELOAD=/tmp/av/noverify.so \
  --config norelax:LD_PRELOAD=/tmp/av/norelax.so --config nocap:LD_PRELOAD=/tmp/av/nocap.so \
  --config all3:LD_PRELOAD=/tmp/av/all3.so > /tmp/suite.log 2>&1
echo "suite rc=$?" >> /tmp/suite.log
{ grep -E "^\| " /tmp/suite/results.md | head -6; tail -2 /tmp/suite.log; } > $O/suite_async.md 2>&1
cp /tmp/suite/results.json $O/suite_async.json 2>/dev/null
cat $O/suite_async.md | cut -c1-400
LIB=$(python3 -m mgpu_cached --libdir)
for V in 19 22; do
  cc -std=c11 -D_GNU_SOURCE -O2 -DPROG_ASYNC -Ibenchmarks/harness -o /tmp/async$V benchmarks/harness/harness.c \
    tests/data/mlir/async_step_llvm$V.o -L"$LIB" -lmgpu_cached -Wl,-rpath,"$LIB" -lm || exit 1
  MGPU_CACHED_TRACE=/tmp/cur$V.json /tmp/async$V 600 1 10 > /dev/null
  LD_PRELOAD=$B MGPU_CACHED_TRACE=/tmp/base$V.json /tmp/async$V 600 1 10 > /dev/null
  echo "== LLVM $V: traced 600 steps (host spans), the library vs the tree before issue 19"
  python3 benchmarks/trace/call_spans.py --skip 50 cached=/tmp/cur$V.json before-391bd88=/tmp/base$V.json
done > $O/call_spans.md 2>&1
cat $O/call_spans.md
