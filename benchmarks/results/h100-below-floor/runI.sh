#!/bin/sh
# Run I (after the review's mends): every GPU test with the graph path on and off; the suite
# (empty, stencil, large) with run F's tree (7a2ffc8) preloaded side by side; chains; thread
# throughput against 7a2ffc8.
set -u
O=$OUT
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation . > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
R=$(pwd)
{ timeout 100 python3 -m pytest -q -rs tests/gpu/ 2>&1 | tail -4; echo "== MGPU_CACHED_GRAPH=0"; MGPU_CACHED_GRAPH=0 timeout 100 python3 -m pytest -q -rs tests/gpu/ 2>&1 | tail -4; } > $O/pytest-gpu.log
timeout 200 python3 benchmarks/run.py --out /tmp/suite --programs empty,stencil,large --rounds 4 --reps 3 --scale 0.3 --config runF-7a2ffc8:LD_PRELOAD=$R/.gpu/f/libmgpu_cached.so > /tmp/suite.log 2>&1; echo "suite rc=$?" >> /tmp/suite.log
timeout 90 python3 benchmarks/chains.py --out /tmp/chains --rounds 3 --reps 3 --launches 6000 > /tmp/chains.log 2>&1
{ cat /tmp/suite/results.md | grep -v "^| .* | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 |$"; tail -1 /tmp/suite.log; cat /tmp/chains/chains.md; } > $O/results.md
{ echo "== before = 7a2ffc8 (run F's tree)"; timeout 50 python3 benchmarks/conc/throughput.py --launches 2000 --reps 3 --before .gpu/f/libmgpu_cached.so 2>&1 | tail -7; } > $O/throughput.txt 2>&1
cat $O/pytest-gpu.log | grep -E "passed|failed|FAILED|^E "; head -14 $O/results.md; tail -12 $O/results.md; cat $O/throughput.txt
