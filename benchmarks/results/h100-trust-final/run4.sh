#!/bin/sh
# Final H100 run, part 4 (after the hit-check merge): every GPU test with the graph path on and off,
# the suite's empty/stencil/large programs, the trace timing test, thread throughput against the
# build right after the stream-handle change (9bc49a9).
set -u
O=$OUT
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation . > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
timeout 200 python3 -m pytest -q -rs tests/gpu/ > $O/pytest-gpu-graph-on.log 2>&1; echo "pytest rc=$?" >> $O/pytest-gpu-graph-on.log
MGPU_CACHED_GRAPH=0 timeout 200 python3 -m pytest -q -rs tests/gpu/ > $O/pytest-gpu-graph-off.log 2>&1; echo "pytest rc=$?" >> $O/pytest-gpu-graph-off.log
timeout 200 python3 benchmarks/run.py --out /tmp/suite --programs empty,stencil,large --rounds 3 --reps 3 --scale 0.3 > $O/suite.log 2>&1; echo "suite rc=$?" >> $O/suite.log
cp /tmp/suite/results.md $O/suite-results.md 2>/dev/null
python3 - >> $O/suite-results.md 2>&1 <<'PY'
import json
d = json.load(open("/tmp/suite/results.json"))
def walk(x, path=""):
    if isinstance(x, dict):
        for k, v in x.items():
            if k in ("verify_skips", "verify_bytes", "module_hits") and isinstance(v, int):
                print(path + "/" + k, v)
            else:
                walk(v, path + "/" + str(k))
    elif isinstance(x, list):
        for i, v in enumerate(x[:2]):
            walk(v, path + f"[{i}]")
print("\n## hit-check counters (first runs of each program)")
walk(d)
PY
{ for g in 0 1; do echo "== trace timing test, MGPU_CACHED_GRAPH=$g"; MGPU_CACHED_GRAPH=$g timeout 40 python3 -m pytest -q -x tests/gpu/test_trace_gpu.py 2>&1 | grep -E "^E |passed|failed" | head -6; done
  echo "== throughput, before = 9bc49a9 (stream handles, no other change of this session)"
  timeout 60 python3 benchmarks/conc/throughput.py --launches 2000 --reps 3 --before .gpu/poolonly/libmgpu_cached.so; } > $O/extra4.txt 2>&1
tail -3 $O/pytest-gpu-graph-on.log $O/pytest-gpu-graph-off.log; grep -E "^FAILED" $O/pytest-gpu-graph-*.log | head; head -20 $O/suite-results.md; grep -A40 "hit-check" $O/suite-results.md | head -20; cat $O/extra4.txt
