#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Issue 19 on the H100, call C (the final tree of the session; same carried paths as A): every GPU
# test with the graph path on and off, review2's gpu_exp.c (all, then G7 under the -g build with
# the SIGSEGV tracer preloaded), and the differential tester's fault classes (reset, sticky).
set -u
. benchmarks/neighbour/setup_h100.sh
cc -O1 -g -std=c11 -D_GNU_SOURCE -fPIC -shared -pthread -Wl,-z,nodelete -Icsrc $(find csrc -mindepth 2 -name "*.c") -o /tmp/libmcg.so -ldl 2>/dev/null || exit 1
cc -shared -fPIC -o /tmp/segv.so benchmarks/neighbour/segv_trace.c -ldl
cc -O1 -std=c11 -D_GNU_SOURCE -o /tmp/gx .gpu/review2/gpu_exp.c -ldl -pthread || exit 1
{ timeout 170 python3 -m pytest -q -rfE --tb=line tests/gpu/ 2>&1 | tail -25; echo "== MGPU_CACHED_GRAPH=0"; MGPU_CACHED_GRAPH=0 timeout 170 python3 -m pytest -q -rfE --tb=line tests/gpu/ 2>&1 | tail -25; } > $O/pytest-gpu.log
{
  echo "== this tree (both columns: the library's default; see COMMAND.md)"
  timeout 150 /tmp/gx /tmp/libmc.so /tmp/libmc.so
  echo "== G7, -g build, SIGSEGV tracer"
  LD_PRELOAD=/tmp/segv.so timeout 60 /tmp/gx /tmp/libmcg.so /tmp/libmcg.so G7
} > $O/gpu_exp.txt 2>&1
timeout 200 bash tests/difftest/gpu_validate.sh /tmp/dtf faults > /tmp/dtf.out 2>&1; echo "rc=$?" >> /tmp/dtf.out
{ cat /tmp/dtf.out; cat /tmp/dtf/run.log; for f in /tmp/dtf/*-differences.txt; do echo "== $f"; head -60 $f; done; } > $O/difftest_faults.txt 2>&1
grep -E "passed|failed|FAILED|ERROR" $O/pytest-gpu.log; grep -E "^G7|CRASH|SIGSEGV|libmcg" $O/gpu_exp.txt | cut -c1-300; grep -E "differences|exit" $O/difftest_faults.txt | cut -c1-200 | head
