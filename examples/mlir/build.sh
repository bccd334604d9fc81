#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Compile examples/mlir/saxpy.mlir with Debian's MLIR packages and link it against mgpu-cached.
#
# Usage: build.sh [OUT_DIR]          (default: ./build)
# Environment:
#   MLIR_BIN  the folder of mlir-opt, mlir-translate, llc (default /usr/lib/llvm-19/bin, from
#             'apt-get install mlir-19-tools llvm-19 libmlir-19')
#   FORMAT    isa (default): the kernel embedded as PTX, compiled by the driver when loaded (no
#             CUDA toolkit needed); fatbin: compiled ahead of time (needs ptxas and fatbinary from
#             the CUDA toolkit on PATH or under CUDA_ROOT)
#   CHIP      the GPU architecture (default sm_80)
#   MGPU_CACHED  the mgpu-cached command (default: mgpu-cached)
# Outputs: OUT_DIR/saxpy.llvm.mlir (for the JIT runner), saxpy.o, and the program OUT_DIR/saxpy.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-build}
BIN=${MLIR_BIN:-/usr/lib/llvm-19/bin}
LIB=$(cd "$BIN/../lib" && pwd)
MGPU_CACHED=${MGPU_CACHED:-mgpu-cached}
mkdir -p "$OUT"
"$BIN/mlir-opt" "$HERE/saxpy.mlir" \
    --gpu-lower-to-nvvm-pipeline="cubin-chip=${CHIP:-sm_80} cubin-format=${FORMAT:-isa}" \
    -o "$OUT/saxpy.llvm.mlir"
"$BIN/mlir-translate" --mlir-to-llvmir "$OUT/saxpy.llvm.mlir" -o "$OUT/saxpy.ll"
"$BIN/llc" -filetype=obj -relocation-model=pic -O2 "$OUT/saxpy.ll" -o "$OUT/saxpy.o"
# vector.print calls printF32/printNewline from MLIR's C runner utilities
RUNNER_UTILS=$(ls "$LIB"/libmlir_c_runner_utils.so* | head -n 1)
eval "cc \"\$OUT/saxpy.o\" $($MGPU_CACHED --ldflags) \"\$RUNNER_UTILS\" -Wl,-rpath,\"\$LIB\" -o \"\$OUT/saxpy\""
echo "$OUT/saxpy"
