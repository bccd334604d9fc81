#!/bin/sh
# The H100 run of the sparse entry points (see COMMAND.md). Run from the worktree root; logs to $OUT.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
L="$OUT/sparse.log"
exec >"$L" 2>&1
echo "== machine"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site ../../.whl/*.whl
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation . || exit 1
# the installed library: site-packages/mgpu_cached/lib, beside the nvidia-* wheels it searches
LIB=$(cd /tmp && python3 -c "import mgpu_cached; print(mgpu_cached.library_path().parent)")
echo "installed: $LIB"
echo "== ldd (no cusparse)"; ldd "$LIB/libmgpu_cached.so"
echo "== nvidia wheels"; ls -d /usr/local/lib/python3*/*-packages/nvidia/*/lib /usr/lib/python3*/*-packages/nvidia/*/lib 2>/dev/null
for h in $(ls /usr/local/lib/python3*/*-packages/nvidia/cusparselt/include/cusparseLt.h /usr/lib/python3*/*-packages/nvidia/cusparselt/include/cusparseLt.h 2>/dev/null); do
  echo "== $h"; grep -n "CUSPARSELT_VER_M\|uint8_t data\[\|CUSPARSE_COMPUTE_" "$h"; done
cc -std=c11 -D_GNU_SOURCE -O2 -o /tmp/sparse_main benchmarks/mlir/sparse/sparse_main.c \
  tests/data/mlir/sparse_gpu_llvm19.o -L"$LIB" -lmgpu_cached -Wl,-rpath,"$LIB" -lm -ldl || exit 1
for mode in cached stock; do
  if [ $mode = stock ]; then export MGPU_CACHED_DISABLE=1; else unset MGPU_CACHED_DISABLE; fi
  echo "== $mode: each program once, checked against the CPU reference"
  for p in spmv spmm sddmm spgemm matmul24; do
    MGPU_CACHED_VERBOSE=1 timeout 120 /tmp/sparse_main $p >/tmp/run.txt 2>&1; rc=$?
    awk '!/^mgpu-cached: / || /loaded from|handle made/' /tmp/run.txt; echo "rc=$rc"
  done
  echo "== $mode: all five, 200 repetitions each (us per call of the MLIR function)"
  MGPU_CACHED_STATS=1 timeout 200 /tmp/sparse_main --reps 200; echo "rc=$?"
done
unset MGPU_CACHED_DISABLE
echo "== JIT runner"; command -v mlir-cpu-runner-19 mlir-runner-22 || echo "no mlir runner on this machine"
echo "== GPU test suite (regression check of the context/device change)"
PYTHONPATH=/tmp/site timeout 240 python3 -m pytest -q -x -p no:cacheprovider tests/gpu 2>&1 | tail -15
date -u
