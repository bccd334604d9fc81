#!/bin/sh
# Run E: thread throughput of three rules for the graph path side by side: this tree (a streak of
# 4 launches by one thread, v3), v1 (a shared count of threads inside a launch, 41faf78), v2 (the
# previous launch by the same thread, 4bc91a3); and 732bc01 (before the graph path). Then the suite's
# empty and stencil programs with v1 preloaded as a config (single-thread cost of the rule).
set -u
O=$OUT
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation . > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
R=$(pwd)
for b in v1 v2 old v1; do echo "== cached = this tree (v3), before = $b"; timeout 60 python3 benchmarks/conc/throughput.py --launches 2000 --reps 3 --before .gpu/$b/libmgpu_cached.so 2>&1 | tail -6; done > $O/throughput.txt 2>&1
timeout 150 python3 benchmarks/run.py --out /tmp/suite --programs empty,stencil --rounds 3 --reps 3 --scale 0.3 --config v1-41faf78:LD_PRELOAD=$R/.gpu/v1/libmgpu_cached.so > /tmp/suite.log 2>&1; echo "suite rc=$?" >> /tmp/suite.log
cp /tmp/suite/results.md $O/suite-results.md
cat $O/throughput.txt; head -12 $O/suite-results.md; tail -1 /tmp/suite.log
