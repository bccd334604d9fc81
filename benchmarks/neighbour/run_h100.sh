#!/bin/sh
# Issue 19 (the good neighbour) on the H100, one device call from the repository root, with
# `.whl` (cffi, pycparser wheels) and `.gpu/base-src` (csrc/ of 391bd88, the tree before this
# issue) carried and ../shared present:
#   - review2's gpu_exp.c, default, with the library's stock behaviour standing in for the stock
#     wrapper (GX_STOCK_DISABLE=1), for this tree and for the tree before the issue; G8 again
#     with MGPU_CACHED_STOCK_SYNC=1
#   - every GPU test with the graph path on and off
#   - the PyTorch-in-the-same-process proof (benchmarks/neighbour/torch_neighbour.py)
#   - the suite (empty, stencil, large, async), chains, thread throughput and callcost with the
#     tree before the issue preloaded side by side
# Logs go to $OUT.
set -u
O=${OUT:-/tmp/out}
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation . > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
R=$(pwd)
CF="-O2 -std=c11 -D_GNU_SOURCE -fPIC -fvisibility=hidden -shared -pthread -Wl,-z,nodelete"
cc $CF -Icsrc csrc/*.c -o /tmp/libmc.so -ldl || exit 1
mkdir -p .gpu/base && cc $CF -I.gpu/base-src/csrc .gpu/base-src/csrc/*.c -o .gpu/base/libmgpu_cached.so -ldl || exit 1
cc -O1 -std=c11 -D_GNU_SOURCE -o /tmp/gx ../shared/review2/gpu_exp.c -ldl -pthread || exit 1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > $O/device.txt
{
  echo "== this tree (stock column: the same library with MGPU_CACHED_DISABLE=1)"
  GX_STOCK_DISABLE=1 timeout 235 /tmp/gx /tmp/libmc.so /tmp/libmc.so
  echo "== this tree, MGPU_CACHED_STOCK_SYNC=1: G8"
  MGPU_CACHED_STOCK_SYNC=1 GX_STOCK_DISABLE=1 timeout 60 /tmp/gx /tmp/libmc.so /tmp/libmc.so G8
  echo "== the tree before issue 19 (391bd88)"
  GX_STOCK_DISABLE=1 timeout 235 /tmp/gx .gpu/base/libmgpu_cached.so .gpu/base/libmgpu_cached.so
} > $O/gpu_exp.txt 2>&1
{ timeout 150 python3 -m pytest -q -rs tests/gpu/ 2>&1 | tail -6; echo "== MGPU_CACHED_GRAPH=0"; MGPU_CACHED_GRAPH=0 timeout 150 python3 -m pytest -q -rs tests/gpu/ 2>&1 | tail -6; } > $O/pytest-gpu.log
timeout 120 python3 benchmarks/neighbour/torch_neighbour.py > $O/torch_neighbour.txt 2>&1; echo "rc=$?" >> $O/torch_neighbour.txt
timeout 240 python3 benchmarks/run.py --out /tmp/suite --programs empty,stencil,large,async,async_prealloc --rounds 3 --reps 3 --scale 0.3 --callcost --config before-391bd88:LD_PRELOAD=$R/.gpu/base/libmgpu_cached.so > /tmp/suite.log 2>&1; echo "suite rc=$?" >> /tmp/suite.log
timeout 90 python3 benchmarks/chains.py --out /tmp/chains --rounds 3 --reps 3 --launches 6000 > /tmp/chains.log 2>&1
{ cat /tmp/suite/results.md; tail -1 /tmp/suite.log; cat /tmp/chains/chains.md; } > $O/results.md 2>&1
{ echo "== before = 391bd88"; timeout 60 python3 benchmarks/conc/throughput.py --launches 2000 --reps 3 --before .gpu/base/libmgpu_cached.so 2>&1 | tail -9; } > $O/throughput.txt 2>&1
grep -E "passed|failed|FAILED|^E " $O/pytest-gpu.log; tail -5 $O/torch_neighbour.txt; head -30 $O/gpu_exp.txt
