#!/bin/sh
# Run H (the tree after the two refactorings of chain.c and the GPU tests): every GPU test with
# the graph path on and off.
set -u
O=$OUT
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation . > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
{ timeout 100 python3 -m pytest -q -rs tests/gpu/ 2>&1 | tail -4; echo "== MGPU_CACHED_GRAPH=0"; MGPU_CACHED_GRAPH=0 timeout 100 python3 -m pytest -q -rs tests/gpu/ 2>&1 | tail -4; } > $O/pytest-gpu.log
cat $O/pytest-gpu.log
