#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Issue 21 item 4: every committed sparse MLIR program (SpMV, SpMM, SDDMM, SpGEMM, 2:4 SpMM; all 31
# sparse mgpu* entry points MLIR 19 emits) in cached mode vs the stock behaviour, side by side in one
# run, one table (benchmarks/mlir/sparse/compare.py: medians of 5 processes per column, modes
# alternating, 20 warm-up + 200 timed calls per program, every result checked). The column
# alloc0 is cached mode with MGPU_CACHED_ALLOCATOR=0 (where a difference comes from the allocator).
# One device-tool call from the repository root, cffi/pycparser wheels in .whl/ (as h100_sparse.sh),
# about 1-2 minutes on the H100:
#   OUT=$OUT sh benchmarks/runs/h100_sparse_compare.sh
# Set BEFORE_LIBDIR to a folder holding an earlier tree's libmgpu_cached.so for a "before" column.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
exec >"$OUT/sparse_compare.log" 2>&1
echo "== machine"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation . || exit 1
LT=$(python3 -c "import sys,pathlib; print(next((str(p) for e in sys.path for p in [pathlib.Path(e)/'nvidia/cusparselt/lib/libcusparseLt.so.0'] if p.exists()), ''))")
echo "cuSPARSELt: ${LT:-not found in site-packages (library search)}"
BEFORE=""; [ -n "${BEFORE_LIBDIR:-}" ] && BEFORE="--lib before=$BEFORE_LIBDIR"
cd /tmp && timeout 170 python3 "$OLDPWD/benchmarks/mlir/sparse/compare.py" --reps 5 --calls 200 \
  --warmup 20 ${LT:+--cusparselt "$LT"} --extra alloc0=MGPU_CACHED_ALLOCATOR=0 $BEFORE \
  --out "$OUT/sparse_compare.md"
echo "rc=$?"; date -u
