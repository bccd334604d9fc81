#!/bin/sh
# Run J (after the review's mends): thread throughput against run F's tree (7a2ffc8), three
# invocations; the suite's large program with 7a2ffc8 preloaded, 6 rounds.
set -u
O=$OUT
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation . > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
R=$(pwd)
for i in 1 2 3; do echo "== invocation $i, before = 7a2ffc8 (run F's tree)"; timeout 50 python3 benchmarks/conc/throughput.py --launches 2000 --reps 3 --before .gpu/f/libmgpu_cached.so 2>&1 | tail -6; done > $O/throughput.txt 2>&1
timeout 150 python3 benchmarks/run.py --out /tmp/suite --programs large --rounds 6 --reps 3 --scale 0.5 --config runF-7a2ffc8:LD_PRELOAD=$R/.gpu/f/libmgpu_cached.so > /tmp/suite.log 2>&1; echo "suite rc=$?" >> /tmp/suite.log
grep -v "^| .* | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 |$" /tmp/suite/results.md > $O/results.md; tail -1 /tmp/suite.log >> $O/results.md
cat $O/throughput.txt; head -12 $O/results.md
