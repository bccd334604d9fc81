#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# SpGEMM repeated 100 times in both modes, after the fix that zeroes an empty CSR result's row
# offsets (csrc/sparse/sparse.c); log in benchmarks/results/h100-sparse/spgemm-repeat.txt. These are
# the SpGEMM and trace-test lines of the trust round's final run (its run2.sh, whose other results
# are superseded: git show c3b5041:benchmarks/results/h100-trust-final/run2.sh). One device-tool call
# from the repository root, $OUT the folder to fill, cffi/pycparser wheels in .whl/.
set -u
O=$OUT
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation . > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
L=$(python3 -c "import mgpu_cached;print(mgpu_cached.libdir())")
{ cc -std=c11 -D_GNU_SOURCE -O2 -o /tmp/sparse_main benchmarks/mlir/sparse/sparse_main.c tests/data/mlir/sparse_gpu_llvm19.o -L$L -lmgpu_cached -Wl,-rpath,$L -lm -ldl
  for d in 0 1; do echo "== spgemm --reps 100, MGPU_CACHED_DISABLE=$d"; MGPU_CACHED_DISABLE=$d timeout 40 /tmp/sparse_main --reps 100 spgemm 2>&1 | tail -3; echo "rc=$?"; done
  timeout 60 python3 -m pytest -q tests/gpu/test_trace_gpu.py 2>&1 | tail -3; } > $O/spgemm-repeat.txt 2>&1
cat $O/spgemm-repeat.txt
