#!/bin/sh
# Final H100 run, part 2: benchmark suite (floor ratios, async step with allocation vs buffers made
# once, large module, callcost), thread throughput with the graph path on / off / the library
# before this session, allocator benchmark, overlap, SpGEMM repeated, the trace timing test.
set -u
O=$OUT
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation . > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
timeout 270 python3 benchmarks/run.py --out /tmp/suite --rounds 3 --reps 3 --scale 0.3 --callcost > $O/suite.log 2>&1; echo "suite rc=$?" >> $O/suite.log
{ echo "== graph path on (default), before = the library at 732bc01"; timeout 70 python3 benchmarks/conc/throughput.py --launches 2000 --reps 3 --before .gpu/old/libmgpu_cached.so
  echo "== MGPU_CACHED_GRAPH=0"; MGPU_CACHED_GRAPH=0 timeout 50 python3 benchmarks/conc/throughput.py --launches 2000 --reps 3; } > $O/throughput.txt 2>&1
timeout 80 python3 benchmarks/alloc_bench.py --rounds 3 > $O/alloc_bench.txt 2>&1
timeout 40 python3 benchmarks/conc/overlap.py --reps 3 > $O/overlap.txt 2>&1
L=$(python3 -c "import mgpu_cached;print(mgpu_cached.libdir())")
{ cc -std=c11 -D_GNU_SOURCE -O2 -o /tmp/sparse_main benchmarks/mlir/sparse/sparse_main.c tests/data/mlir/sparse_gpu_llvm19.o -L$L -lmgpu_cached -Wl,-rpath,$L -lm -ldl
  for d in 0 1; do echo "== spgemm --reps 100, MGPU_CACHED_DISABLE=$d"; MGPU_CACHED_DISABLE=$d timeout 40 /tmp/sparse_main --reps 100 spgemm 2>&1 | tail -3; echo "rc=$?"; done
  timeout 60 python3 -m pytest -q tests/gpu/test_trace_gpu.py 2>&1 | tail -3; } > $O/extra.txt 2>&1
cp /tmp/suite/results.md $O/suite-results.md 2>/dev/null; cp /tmp/suite/callcost.txt $O/callcost.txt 2>/dev/null
tail -2 $O/suite.log; head -70 $O/suite-results.md; cat $O/throughput.txt | grep -v "^ *$" | tail -16; tail -22 $O/alloc_bench.txt; tail -6 $O/overlap.txt; cat $O/extra.txt
