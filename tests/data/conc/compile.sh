#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Compile conc.mlir (the concurrency test programs, issue 4) into conc_llvm19.o / conc_llvm22.o:
# x86-64 PIC objects with host code and an embedded sm_90 fatbin. Same pipeline as
# benchmarks/mlir/compile.sh, with --convert-scf-to-cf first (LLVM 19 and 22 cannot legalise a
# token carried through an scf.for otherwise; see the reference notes on the ABI, section 2).
# Usage: compile.sh 19|22 [OUT_DIR]    (default OUT_DIR: this directory)
set -eu
V=${1:?usage: compile.sh 19|22 [out_dir]}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${2:-$HERE}; mkdir -p "$OUT"
BIN=${MLIR_BIN:-/opt/mlirtc/bin}
export CUDA_ROOT=${CUDA_PATH_DIR:-/usr/local/cuda} PATH=${CUDA_PATH_DIR:-/usr/local/cuda}/bin:$PATH
T=$(mktemp -d /tmp/conc-mlir.XXXXXX)
"$BIN/mlir-opt-$V" "$HERE/conc.mlir" --convert-scf-to-cf \
  --gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90 cubin-features=+ptx80 cubin-format=fatbin" \
  -o "$T/conc.llvm.mlir"
"$BIN/mlir-translate-$V" --mlir-to-llvmir "$T/conc.llvm.mlir" -o "$T/conc.ll"
"$BIN/llc-$V" -filetype=obj -relocation-model=pic -O2 "$T/conc.ll" -o "$OUT/conc_llvm$V.o"
cp "$T/conc.ll" "/tmp/conc_llvm$V.ll" # for inspection
rm -rf "$T"
echo "$OUT/conc_llvm$V.o"
