#!/bin/sh
# Run B: every GPU test with the graph path on and off, then the suite's empty and stencil
# programs again (5 rounds) with the graph path on and off.
set -u
O=$OUT
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation . > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
timeout 170 python3 -m pytest -q -rs tests/gpu/ > $O/pytest-gpu-graph-on.log 2>&1; echo "pytest rc=$?" >> $O/pytest-gpu-graph-on.log
MGPU_CACHED_GRAPH=0 timeout 170 python3 -m pytest -q -rs tests/gpu/ > $O/pytest-gpu-graph-off.log 2>&1; echo "pytest rc=$?" >> $O/pytest-gpu-graph-off.log
timeout 200 python3 benchmarks/run.py --out /tmp/suite --programs empty,stencil --rounds 5 --reps 3 --scale 0.3 --config nograph:MGPU_CACHED_GRAPH=0 > $O/suite.log 2>&1; echo "suite rc=$?" >> $O/suite.log
cp /tmp/suite/results.md $O/suite-results.md
tail -3 $O/pytest-gpu-graph-on.log $O/pytest-gpu-graph-off.log; grep -E "^(FAILED|E  )" $O/pytest-gpu-graph-*.log | head -20; head -14 $O/suite-results.md; tail -1 $O/suite.log
