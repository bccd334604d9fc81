#!/bin/sh
# Final H100 run, part 3: the conformance corpus (MLIR 19 and 22, cached and stock), the trace
# timing test's numbers, and thread throughput against the build right after the stream-handle
# change (9bc49a9) to locate the 8-thread difference.
set -u
O=$OUT
OUT=$O timeout 330 sh tests/corpus/gpu_run.sh; echo "corpus rc=$?" >> $O/gpu_run.log
{ MGPU_CACHED_GRAPH=0 timeout 40 python3 -m pytest -q -x tests/gpu/test_trace_gpu.py 2>&1 | grep -E "^E |passed|failed" | head -8
  echo "== throughput, before = 9bc49a9 (stream handles, no other change of this session)"
  timeout 60 python3 benchmarks/conc/throughput.py --launches 2000 --reps 3 --before .gpu/poolonly/libmgpu_cached.so; } > $O/extra3.txt 2>&1
tail -25 $O/gpu_run.log; cat $O/extra3.txt
