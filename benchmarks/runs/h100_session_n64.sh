#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N64 (one H100, nvidia-h100-x1): which driver calls of the library's launch paths the driver
# accepts with no context current, and what each costs both ways (benchmarks/harness/
# nocontext_calls.c); the thread throughput of the committed library (bare launches on) beside
# the same library pushing (MGPU_CACHED_BARE_LAUNCH=0), the driver's push / pop loop, its loop
# with no context current, and that loop with the library's per-launch checks of LLVM <= 20 code
# (cuCtxGetCurrent + cuCtxGetId), 9 reps. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
cc -O2 -std=c11 -I/usr/local/cuda/include benchmarks/harness/nocontext_calls.c -o /tmp/ncc -lcuda
for op in 0 1 2 3 4 5 6 7 8 9 10 11 12 13; do  # each call in its own process (N64b; N64: one
  timeout 30 /tmp/ncc tests/data/kernels.fatbin 5000 $op; echo "  rc=$?"  # process, which crashed)
done > $O/nocontext_calls.txt 2>&1; cat $O/nocontext_calls.txt
[ "${NOCONTEXT_ONLY:-0}" = 1 ] && exit 0
timeout 300 python3 benchmarks/conc/throughput.py --launches 20000 --reps 9 --diagnose \
  --only "cached,cached pushed,cached llvm19-load,cached llvm19-load pushed,driver ctx push/pop,driver no context,driver no context + checks" \
  > $O/throughput_n64.txt 2>&1
echo "rc=$?" >> $O/throughput_n64.txt; tail -14 $O/throughput_n64.txt
