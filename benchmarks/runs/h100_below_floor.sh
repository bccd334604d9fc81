#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The H100 run of the below-the-floor round (issue 12), results in benchmarks/results/h100-below-floor/
# (run F; this script was runD.sh there). One device-tool call from the repository root, with $OUT the
# folder to fill, cffi/pycparser wheels carried in .whl/ and, for the side-by-side throughput, builds
# of 732bc01 and 19febbd carried in .gpu/old/ and .gpu/prev/.
# Every GPU test with the graph path on and off; the driver's graph limits;
# the suite (empty, stencil, large; LLVM 19 and 22) with the graph path on and off and callcost;
# chains; thread throughput against 732bc01 (before the graph path) and 19febbd (previous main);
# overlap; mgpu-cached bench.
set -u
O=$OUT
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation . > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/device.txt 2>&1
{ timeout 100 python3 -m pytest -q -rs tests/gpu/ 2>&1 | tail -12; echo "== MGPU_CACHED_GRAPH=0"; MGPU_CACHED_GRAPH=0 timeout 100 python3 -m pytest -q -rs tests/gpu/ 2>&1 | tail -12; } > $O/pytest-gpu.log
timeout 60 python3 benchmarks/graph_floor.py --out /tmp/gf --rounds 3 --reps 3 --n 10000 > /tmp/gf.log 2>&1
timeout 170 python3 benchmarks/run.py --out /tmp/suite --programs empty,stencil,large --rounds 4 --reps 3 --scale 0.3 --callcost --config nograph:MGPU_CACHED_GRAPH=0 > /tmp/suite.log 2>&1; echo "suite rc=$?" >> /tmp/suite.log
timeout 90 python3 benchmarks/chains.py --out /tmp/chains --rounds 3 --reps 3 --launches 6000 > /tmp/chains.log 2>&1
{ cat /tmp/gf/graph_floor.md; cat /tmp/suite/results.md; tail -1 /tmp/suite.log; cat /tmp/chains/chains.md; } > $O/results.md
cp /tmp/suite/callcost.txt $O/callcost.txt
{ echo "== before = 732bc01 (before the graph path)"; timeout 50 python3 benchmarks/conc/throughput.py --launches 2000 --reps 3 --before .gpu/old/libmgpu_cached.so 2>&1 | tail -7
  echo "== before = 19febbd (previous main)"; timeout 50 python3 benchmarks/conc/throughput.py --launches 2000 --reps 3 --before .gpu/prev/libmgpu_cached.so 2>&1 | tail -7
  echo "== overlap"; timeout 30 python3 benchmarks/conc/overlap.py --reps 3 2>&1 | tail -10; } > $O/throughput-overlap.txt 2>&1
timeout 70 mgpu-cached bench --iterations 2000 --rounds 3 2>/dev/null > $O/bench.txt; echo "bench rc=$?" >> $O/bench.txt
cat $O/pytest-gpu.log | grep -E "passed|failed|FAILED|^E "; cat $O/results.md | grep -v "^| .* | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 |$"; cat $O/throughput-overlap.txt; cat $O/bench.txt
