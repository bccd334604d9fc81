#!/bin/sh
# Final H100 run, part 5 (streams bound when made, reclaimer start inside a round): every GPU test,
# thread throughput against the build at the start of the round (732bc01).
set -u
O=$OUT
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation . > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
timeout 150 python3 -m pytest -q -rs tests/gpu/ > $O/pytest-gpu.log 2>&1; echo "pytest rc=$?" >> $O/pytest-gpu.log
{ echo "== graph path on (default), before = 732bc01"; timeout 60 python3 benchmarks/conc/throughput.py --launches 2000 --reps 3 --before .gpu/old/libmgpu_cached.so 2>&1 | tail -6
  echo "== MGPU_CACHED_GRAPH=0, before = 732bc01"; MGPU_CACHED_GRAPH=0 timeout 60 python3 benchmarks/conc/throughput.py --launches 2000 --reps 3 --before .gpu/old/libmgpu_cached.so 2>&1 | tail -6; } > $O/throughput.txt
tail -2 $O/pytest-gpu.log; grep -E "^(FAILED|E  )" $O/pytest-gpu.log | head -20; cat $O/throughput.txt
