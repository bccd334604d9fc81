#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Compile the MLIR GPU benchmarks into x86-64 PIC object files (host code + embedded sm_90 fatbin).
#
# Usage: compile.sh VERSION [BUILD_DIR]
#   VERSION    19 or 22
#   BUILD_DIR  output dir (default: <this dir>/build)
# Environment:
#   MLIR_BIN_19 / MLIR_BIN_22  dir holding mlir-opt-N, mlir-translate-N, llc-N (default /opt/mlirtc/bin);
#                              falls back to PATH if not found there
#   CUDA_PATH_DIR              CUDA toolkit with bin/ptxas and bin/fatbinary (default /usr/local/cuda)
#   GPU_CHIP / GPU_FEATURES    default sm_90 / +ptx80
# Outputs: BUILD_DIR/<name>_llvmN.o for each <name>.mlir in $PROGRAMS (default: all four) (plus .llvm.mlir/.ll intermediates).
set -eu
V=${1:?usage: compile.sh 19|22 [build_dir]}
case "$V" in 19|22) ;; *) echo "compile.sh: version must be 19 or 22" >&2; exit 2;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${2:-$HERE/build}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
eval "BIN=\${MLIR_BIN_$V:-/opt/mlirtc/bin}"
CUDA=${CUDA_PATH_DIR:-/usr/local/cuda}
CHIP=${GPU_CHIP:-sm_90}
FEAT=${GPU_FEATURES:-+ptx80}

tool() { if [ -x "$BIN/$1-$V" ]; then echo "$BIN/$1-$V"; elif [ -x "$BIN/$1" ]; then echo "$BIN/$1";
         else command -v "$1-$V" || { echo "compile.sh: $1-$V not found" >&2; exit 1; }; fi; }
OPT=$(tool mlir-opt); TRANSLATE=$(tool mlir-translate); LLC=$(tool llc)

# The NVVM serializer finds ptxas/fatbinary via CUDA_ROOT (or PATH).
export CUDA_ROOT="$CUDA" PATH="$CUDA/bin:$PATH"

PIPE="cubin-chip=$CHIP cubin-features=$FEAT cubin-format=fatbin"
for name in ${PROGRAMS:-empty_loop saxpy stencil async_step}; do
  o="$OUT/${name}_llvm$V.o"
  # intermediates kept for inspection: *_llvmN.llvm.mlir (LLVM dialect), *_llvmN.ll (LLVM IR)
  "$OPT" "$HERE/$name.mlir" --gpu-lower-to-nvvm-pipeline="$PIPE" -o "$OUT/${name}_llvm$V.llvm.mlir"
  "$TRANSLATE" --mlir-to-llvmir "$OUT/${name}_llvm$V.llvm.mlir" -o "$OUT/${name}_llvm$V.ll"
  "$LLC" -filetype=obj -relocation-model=pic -O2 "$OUT/${name}_llvm$V.ll" -o "$o"
  echo "$o"
done
