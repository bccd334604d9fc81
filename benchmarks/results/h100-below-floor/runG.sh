#!/bin/sh
# Run G (final tree): the suite's empty and stencil programs, 8 rounds (the floor of one process
# varies by up to 10% from run to run: more rounds, steadier medians).
set -u
O=$OUT
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation . > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
timeout 280 python3 benchmarks/run.py --out /tmp/suite --programs empty,stencil --rounds 8 --reps 3 --scale 0.3 --config nograph:MGPU_CACHED_GRAPH=0 > /tmp/suite.log 2>&1; echo "suite rc=$?" >> /tmp/suite.log
cp /tmp/suite/results.md $O/suite-results.md; cp /tmp/suite/results.json $O/results.json
head -12 $O/suite-results.md; tail -1 /tmp/suite.log
