#!/bin/sh
# Thread throughput: where the 8-16 thread loss comes from (graph path off for every build).
set -u
O=$OUT
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation . > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
export MGPU_CACHED_GRAPH=0
for v in old v1 v2 poolonly; do echo "== before = $v"; timeout 60 python3 benchmarks/conc/throughput.py --launches 2000 --reps 3 --before .gpu/$v/libmgpu_cached.so 2>&1 | tail -6; done > $O/tp.txt
cat $O/tp.txt
