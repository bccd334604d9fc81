#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Lower the JIT-path test program for mlir-cpu-runner-19 / mlir-runner-22 (no CUDA toolkit needed:
# the kernel is embedded as PTX, cubin-format=isa, and loaded with mgpuModuleLoadJIT).
# Usage: compile.sh VERSION   (19 or 22; needs mlir-opt-VERSION on PATH)
# Output: scale_llvmVERSION.llvm.mlir beside this script.
set -eu
V=${1:?usage: compile.sh 19|22}
HERE=$(cd "$(dirname "$0")" && pwd)
"mlir-opt-$V" "$HERE/scale.mlir" \
  --gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90 cubin-features=+ptx80 cubin-format=isa" \
  -o "$HERE/scale_llvm$V.llvm.mlir"
