#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Issue 19 on the H100, call B (after call A, same carried paths): GPU test failures in detail,
# G7 with a stack trace on SIGSEGV, G8 with MGPU_CACHED_STOCK_SYNC=1 (a copy of gpu_exp.c that
# keeps that variable: the original clears every MGPU_CACHED_* variable), the fatbin
# decompressors present, and the benchmark suite with the tree before the issue side by side.
set -u
. benchmarks/neighbour/setup_h100.sh
cc -O1 -g -std=c11 -D_GNU_SOURCE -fPIC -shared -pthread -Wl,-z,nodelete -Icsrc $(find csrc -mindepth 2 -name "*.c") -o /tmp/libmcg.so -ldl 2>/dev/null || exit 1
cc -shared -fPIC -o /tmp/segv.so benchmarks/neighbour/segv_trace.c -ldl
sed 's/if (!strncmp(\*e, "MGPU_CACHED_", 12)) {/if (!strncmp(*e, "MGPU_CACHED_", 12) \&\& !getenv("GX_KEEP")) {/' .gpu/review2/gpu_exp.c > /tmp/gxk.c
cc -O1 -std=c11 -D_GNU_SOURCE -o /tmp/gxk /tmp/gxk.c -ldl -pthread || exit 1
{
  echo "== ldconfig: decompressors"; ldconfig -p | grep -E "libzstd|liblz4"
  echo "== G7, -g build, SIGSEGV stack"
  LD_PRELOAD=/tmp/segv.so timeout 60 /tmp/gxk /tmp/libmcg.so /tmp/libmcg.so G7 2>&1
  echo "== G8 with MGPU_CACHED_STOCK_SYNC=1 (both columns)"
  GX_KEEP=1 MGPU_CACHED_STOCK_SYNC=1 timeout 60 /tmp/gxk /tmp/libmcg.so /tmp/libmcg.so G8 2>&1
} > $O/g7_g8.txt 2>&1
for a in $(grep -o "libmcg.so(+0x[0-9a-f]*)" $O/g7_g8.txt | sed 's/.*+\(0x[0-9a-f]*\))/\1/' | sort -u); do echo "$a $(addr2line -f -e /tmp/libmcg.so $a | tr '\n' ' ')"; done >> $O/g7_g8.txt
timeout 200 python3 -m pytest -q -rfE --tb=line tests/gpu/ > $O/pytest-gpu-detail.log 2>&1
timeout 200 python3 benchmarks/run.py --out /tmp/suite --programs empty,stencil,large,async,async_prealloc --rounds 3 --reps 3 --scale 0.3 --callcost --config before-391bd88:LD_PRELOAD=$R/.gpu/base/libmgpu_cached.so > /tmp/suite.log 2>&1; echo "suite rc=$?" >> /tmp/suite.log
{ cat /tmp/suite/results.md; tail -3 /tmp/suite.log; } > $O/results.md 2>&1
{ echo "== before = 391bd88"; timeout 60 python3 benchmarks/conc/throughput.py --launches 2000 --reps 3 --before .gpu/base/libmgpu_cached.so 2>&1 | tail -9; } > $O/throughput.txt 2>&1
cat $O/g7_g8.txt | cut -c1-300 | tail -30; grep -E "^FAILED|^ERROR|passed|failed" $O/pytest-gpu-detail.log | head -30; grep -B2 -A3 "AssertionError\|Error" $O/pytest-gpu-detail.log | head -60
