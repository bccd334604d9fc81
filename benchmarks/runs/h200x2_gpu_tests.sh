#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Two H200s (final tree of the below-the-floor round), results in benchmarks/results/h200x2-below-floor/
# (this script was run.sh there; `OUT=$OUT sh benchmarks/runs/h200x2_gpu_tests.sh` from the
# repository root, wheels in .whl/): every GPU test with the graph path on and
# off (the two-GPU tests run here), objects staying on their device in both modes.
set -u
O=$OUT
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation . > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
nvidia-smi --query-gpu=index,name,driver_version --format=csv > $O/device.txt 2>&1
{ timeout 120 python3 -m pytest -q -rs tests/gpu/ 2>&1 | tail -6; echo "== MGPU_CACHED_GRAPH=0"; MGPU_CACHED_GRAPH=0 timeout 120 python3 -m pytest -q -rs tests/gpu/ 2>&1 | tail -6; } > $O/pytest-gpu.log
L=$(python3 -c "import mgpu_cached;print(mgpu_cached.libdir())")
cc -std=c11 -O1 -o /tmp/stay tests/data/conc/stay_on_device.c -L$L -lmgpu_cached -Wl,-rpath,$L
{ for g in 1 0; do for d in 0 1; do echo "== stay_on_device MGPU_CACHED_GRAPH=$g MGPU_CACHED_DISABLE=$d"; MGPU_CACHED_GRAPH=$g MGPU_CACHED_DISABLE=$d timeout 60 /tmp/stay tests/data/kernels.fatbin 2>&1; echo "exit $?"; done; done; } > $O/two-gpu.txt 2>&1
cat $O/device.txt $O/pytest-gpu.log $O/two-gpu.txt
