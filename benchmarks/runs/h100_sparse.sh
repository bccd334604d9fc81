#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The H100 run of the sparse programs (issue 13), log in benchmarks/results/h100-sparse/run2.log
# (this script was run_gpu2.sh there). One device-tool call from the repository root, with $OUT the
# folder to fill and cffi/pycparser wheels carried in .whl/:  OUT=$OUT sh benchmarks/runs/h100_sparse.sh
# The five sparse programs in both modes, repeated, with the
# diagnostics for the SpGEMM result seen wrong in run 1 (cached mode, 200 repetitions after the
# other programs): alone, without the caching allocator, with device memory dirtied between calls.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
exec >"$OUT/run2.log" 2>&1
echo "== machine"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation . || exit 1
LIB=$(cd /tmp && python3 -c "import mgpu_cached; print(mgpu_cached.library_path().parent)")
echo "installed: $LIB"
cc -std=c11 -D_GNU_SOURCE -O2 -o /tmp/sparse_main benchmarks/mlir/sparse/sparse_main.c \
  tests/data/mlir/sparse_gpu_llvm19.o -L"$LIB" -lmgpu_cached -Wl,-rpath,"$LIB" -lm -ldl || exit 1
run() { echo "== $*"; env "$@"; echo "rc=$?"; }
for mode in cached stock; do
  D=; [ $mode = stock ] && D=1
  for p in spmv spmm sddmm spgemm matmul24; do
    run MGPU_CACHED_DISABLE=$D timeout 120 /tmp/sparse_main $p
  done
  run MGPU_CACHED_DISABLE=$D MGPU_CACHED_STATS=1 timeout 200 /tmp/sparse_main --reps 200
  run MGPU_CACHED_DISABLE=$D timeout 200 /tmp/sparse_main --reps 100 spgemm
  run MGPU_CACHED_DISABLE=$D timeout 200 /tmp/sparse_main --dirty --reps 50
done
run MGPU_CACHED_ALLOCATOR=0 timeout 200 /tmp/sparse_main --reps 200
run MGPU_CACHED_ALLOCATOR=0 timeout 200 /tmp/sparse_main --dirty --reps 50
echo "== GPU tests of this branch"
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/gpu 2>&1 | tail -8
date -u
