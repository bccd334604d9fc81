#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Compile counter.mlir (module-scope state, issue 19 item 1) into counter_llvm19.o / counter_llvm22.o:
# x86-64 PIC objects with host code and an embedded sm_90 fatbin (cubin + PTX, both holding the
# global). The benchmark pipeline (benchmarks/mlir/compile.sh).
# Usage: compile.sh 19|22 [OUT_DIR]    (default OUT_DIR: this directory)
#   MLIR_BIN: the directory with mlir-opt-N, mlir-translate-N, llc-N (default /opt/mlirtc/bin,
#   falling back to PATH: Debian bookworm's mlir-19-tools put mlir-opt-19 in /usr/bin). LLVM 22
#   (Debian trixie's 22.1.8): benchmarks/mlir/setup_trixie.sh makes /opt/mlirtc/bin/*-22.
#   CUDA_PATH_DIR: the toolkit with bin/ptxas and bin/fatbinary (default /usr/local/cuda; both
#   committed objects: CUDA 13.0, ptxas V13.0.88). tests/test_module_state.py remakes the
#   objects and compares bytes where these toolchains are installed.
set -eu
V=${1:?usage: compile.sh 19|22 [out_dir]}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${2:-$HERE}; mkdir -p "$OUT"
BIN=${MLIR_BIN:-/opt/mlirtc/bin}
tool() { if [ -x "$BIN/$1-$V" ]; then echo "$BIN/$1-$V"; else command -v "$1-$V"; fi; }
export CUDA_ROOT=${CUDA_PATH_DIR:-/usr/local/cuda} PATH=${CUDA_PATH_DIR:-/usr/local/cuda}/bin:$PATH
T=$(mktemp -d /tmp/modstate-mlir.XXXXXX)
"$(tool mlir-opt)" "$HERE/counter.mlir" \
  --gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90 cubin-features=+ptx80 cubin-format=fatbin" \
  -o "$T/counter.llvm.mlir"
"$(tool mlir-translate)" --mlir-to-llvmir "$T/counter.llvm.mlir" -o "$T/counter.ll"
"$(tool llc)" -filetype=obj -relocation-model=pic -O2 "$T/counter.ll" -o "$OUT/counter_llvm$V.o"
rm -rf "$T"
echo "$OUT/counter_llvm$V.o"
