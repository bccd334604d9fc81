#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# reset_trace.sh - issue 19, the reset class's crashes on the H100: each minimised program of
# run D (reset_crash_programs.txt) run 5 times by the difftest runner against a -g build of the
# library with the SIGSEGV tracer preloaded; library frames resolved with addr2line. Then the
# reset class again (150 programs, seed 19, as run D). Same carried paths as run_h100_a.sh.
set -u
. benchmarks/neighbour/setup_h100.sh
D=/tmp/libdbg; mkdir -p $D
cc -O1 -g -std=c11 -D_GNU_SOURCE -fPIC -fvisibility=hidden -shared -pthread -Wl,-z,nodelete -Icsrc \
   $(find csrc -mindepth 2 -name '*.c') -o $D/libmgpu_cached.so -ldl 2>/dev/null || exit 1
cc -shared -fPIC -o /tmp/segv.so benchmarks/neighbour/segv_trace.c -ldl
cc -std=c11 -O1 -g -rdynamic -pthread -o /tmp/rr tests/difftest/runner.c -Icsrc/include -L$D \
   -lmgpu_cached -Wl,-rpath,$D -ldl || exit 1
awk -v d=/tmp/prog '/^seq /{n++} {print > (d "_" n ".txt")}' benchmarks/neighbour/reset_crash_programs.txt
{
for p in /tmp/prog_*.txt; do
  for i in 1 2 3 4 5; do
    echo "== $p try $i ($(head -1 $p))"
    MGPU_CACHED_BACKEND=cuda MGPU_CACHED_DISABLE=0 DIFFTEST_SEED=19 DIFFTEST_TIMEOUT=30 \
      LD_PRELOAD=/tmp/segv.so timeout 60 /tmp/rr tests/difftest/kernels.fatbin $p > /tmp/o.txt 2> /tmp/e.txt
    echo "rc=$?"
    if grep -q SIGSEGV /tmp/e.txt; then
      grep -v "^@@" /tmp/e.txt | head -40
      grep -o 'libmgpu_cached.so(+0x[0-9a-f]*)' /tmp/e.txt | sed 's/.*(+\(0x[0-9a-f]*\))/\1/' |
        while read a; do addr2line -f -i -p -e $D/libmgpu_cached.so $a; done
      break
    fi
  done
done
} > $O/reset_trace.txt 2>&1
mkdir -p /tmp/libmcd && cp /tmp/libmc.so /tmp/libmcd/libmgpu_cached.so
timeout 200 python3 tests/difftest/difftest.py --profile ordered --classes reset --programs 150 \
  --seed 19 --minimise 0 --lib /tmp/libmcd/libmgpu_cached.so --out /tmp/rd > $O/reset_class.txt 2>&1
echo "rc=$?" >> $O/reset_class.txt
grep -c SIGSEGV $O/reset_trace.txt; tail -3 $O/reset_class.txt | cut -c1-300
