#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Lower sparse_gpu.mlir through the sparsifier's GPU library path (cuSPARSE / cuSPARSELt calls,
# no kernels, no sparse runtime library) into an x86-64 PIC object.
# Usage: compile.sh VERSION [OUT_DIR]   (19 or 22; needs mlir-opt-N and mlir-translate-N on PATH)
# Output: OUT_DIR/sparse_gpu_llvmN.o (default: tests/data/mlir/); prints the mgpu* calls made.
# Code generation uses llc-N; where Debian has no llc-22 installed beside mlir-22-tools (the
# packages conflict with LLVM 19's), llc-19 compiles MLIR 22's LLVM IR once the one attribute it
# does not know yet (`captures(none)`, an optimisation hint) is dropped.
set -eu
V=${1:?usage: compile.sh 19|22 [out_dir]}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${2:-$HERE/../../../tests/data/mlir}
T=$(mktemp -d)
"mlir-opt-$V" "$HERE/sparse_gpu.mlir" --sparsifier="enable-runtime-library=false \
  enable-gpu-libgen gpu-triple=nvptx64-nvidia-cuda gpu-chip=sm_90 gpu-features=+ptx80 \
  gpu-format=fatbin" -o "$T/sparse.llvm.mlir"
"mlir-translate-$V" --mlir-to-llvmir "$T/sparse.llvm.mlir" -o "$T/sparse.ll"
if command -v "llc-$V" >/dev/null 2>&1; then
  "llc-$V" -filetype=obj -relocation-model=pic -O2 "$T/sparse.ll" -o "$OUT/sparse_gpu_llvm$V.o"
else
  sed 's/ captures(none)//g' "$T/sparse.ll" > "$T/sparse19.ll"
  llc-19 -filetype=obj -relocation-model=pic -O2 "$T/sparse19.ll" -o "$OUT/sparse_gpu_llvm$V.o"
fi
grep -o 'llvm.call @mgpu[A-Za-z0-9]*' "$T/sparse.llvm.mlir" | sort | uniq -c
rm -rf "$T"
echo "$OUT/sparse_gpu_llvm$V.o"
