#!/bin/sh
# Run A: the driver's graph limits (graph_floor.py), the suite's empty/stencil/large programs with
# the graph path on, off and with one exec per stream, callcost, the chain benchmark.
set -u
O=$OUT
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation . > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $O/device.txt 2>&1
timeout 100 python3 benchmarks/graph_floor.py --out /tmp/gf --rounds 3 --reps 3 --n 10000 > $O/graph_floor.log 2>&1; echo "graph_floor rc=$?" >> $O/graph_floor.log
timeout 300 python3 benchmarks/run.py --out /tmp/suite --programs empty,stencil,large --rounds 3 --reps 3 --scale 0.3 --callcost --config nograph:MGPU_CACHED_GRAPH=0 --config oneexec:MGPU_CACHED_GRAPH_EXECS=1 > $O/suite.log 2>&1; echo "suite rc=$?" >> $O/suite.log
timeout 150 python3 benchmarks/chains.py --out /tmp/chains --rounds 3 --reps 3 --launches 6000 > $O/chains.log 2>&1; echo "chains rc=$?" >> $O/chains.log
cp /tmp/suite/results.md $O/suite-results.md; cp /tmp/suite/callcost.txt $O/callcost.txt; cp /tmp/chains/chains.md $O/chains.md; cp /tmp/gf/graph_floor.md $O/graph_floor.md
cat $O/device.txt; cat $O/graph_floor.md; tail -2 $O/graph_floor.log; cat $O/suite-results.md; tail -1 $O/suite.log; cat $O/chains.md; tail -1 $O/chains.log
