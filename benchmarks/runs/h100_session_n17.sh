#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N17 (one H100, nvidia-h100-x1): the thread throughput after the gate's word got a cache line
# of its own and claims every 4096 launches at most; the session's starting tree (.gpu/start-src,
# carried) preloaded as "before"; the gate's counters at 4/8/16 threads. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
cc -std=c11 -O2 -pthread -o /tmp/lt benchmarks/conc/launch_threads.c $(mgpu-cached --ldflags) -ldl
for t in 4 8 16; do
  echo "== $t threads"; MGPU_CACHED_STATS=1 /tmp/lt mgpu tests/data/kernels.fatbin 20000 $t 2>&1 |
    grep -E "^mgpu|  launches|graph_launches|contended|launcher_stores" | tr '\n' ' '; echo
done > $O/gate_stats.txt 2>&1; cat $O/gate_stats.txt
timeout 420 python3 benchmarks/conc/throughput.py --launches 20000 --reps 7 --diagnose \
  --before .gpu/start/libmgpu_cached.so --only "cached,stock,driver ctx push/pop,before" \
  > $O/throughput.txt 2>&1; echo "rc=$?" >> $O/throughput.txt; cat $O/throughput.txt
