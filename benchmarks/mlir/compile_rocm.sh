#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Compile the MLIR GPU benchmarks for ROCm into x86-64 PIC object files (host code + an embedded
# AMD code object, gfx942 by default), with Debian's MLIR tools only: no ROCm installation needed.
#
# Usage: compile_rocm.sh VERSION [BUILD_DIR]
#   VERSION    19 or 22
#   BUILD_DIR  output dir (default: <this dir>/build)
# Environment:
#   MLIR_BIN_19 / MLIR_BIN_22  dir holding mlir-opt-N, mlir-translate-N, llc-N (default /opt/mlirtc/bin)
#   GPU_CHIP                   default gfx942 (MI300X)
#   ROCM_TOOLKIT               a ROCm installation to take ld.lld and the device libraries from; by
#                              default a stand-in is made under BUILD_DIR: LLVM's own ld.lld and an
#                              empty ockl.bc (the kernels here call no device-library function, and
#                              the ROCDL serializer only insists that the file exists).
# Outputs: BUILD_DIR/<name>_rocm_llvmN.o for each <name>.mlir listed below.
set -eu
V=${1:?usage: compile_rocm.sh 19|22 [build_dir]}
case "$V" in 19|22) ;; *) echo "compile_rocm.sh: version must be 19 or 22" >&2; exit 2;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${2:-$HERE/build}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
eval "BIN=\${MLIR_BIN_$V:-/opt/mlirtc/bin}"
CHIP=${GPU_CHIP:-gfx942}

tool() { if [ -x "$BIN/$1-$V" ]; then echo "$BIN/$1-$V"; elif [ -x "$BIN/$1" ]; then echo "$BIN/$1";
         else command -v "$1-$V" || { echo "compile_rocm.sh: $1-$V not found" >&2; exit 1; }; fi; }
OPT=$(tool mlir-opt); TRANSLATE=$(tool mlir-translate); LLC=$(tool llc)

TK=${ROCM_TOOLKIT:-}
if [ -z "$TK" ]; then
  # LLVM 22's tools run in a chroot that sees /tmp and the checkout's folder (setup_trixie.sh): the
  # stand-in must live there and
  # point at the ld.lld of the same LLVM as seen from inside.
  TK="$OUT/rocm-standin-$V"
  mkdir -p "$TK/amdgcn/bitcode" "$TK/llvm/bin"
  ln -sf "/usr/lib/llvm-$V/bin/ld.lld" "$TK/llvm/bin/ld.lld"
  printf 'target triple = "amdgcn-amd-amdhsa"\n' > "$TK/empty.ll"
  AS=/usr/lib/llvm-19/bin/llvm-as; [ -x "$AS" ] || AS=llvm-as   # any LLVM >= 19 reads it
  "$AS" "$TK/empty.ll" -o "$TK/amdgcn/bitcode/ockl.bc"
fi

for name in empty_loop saxpy; do
  b="$OUT/${name}_rocm_llvm$V"
  "$OPT" "$HERE/$name.mlir" --pass-pipeline="builtin.module(gpu.module(strip-debuginfo,convert-gpu-to-rocdl{runtime=HIP}),rocdl-attach-target{chip=$CHIP})" -o "$b.rocdl.mlir"
  "$OPT" "$b.rocdl.mlir" --convert-scf-to-cf --convert-arith-to-llvm --finalize-memref-to-llvm \
    --convert-func-to-llvm --gpu-to-llvm --reconcile-unrealized-casts \
    --gpu-module-to-binary="toolkit=$TK" -o "$b.llvm.mlir"
  "$TRANSLATE" --mlir-to-llvmir "$b.llvm.mlir" -o "$b.ll"
  "$LLC" -filetype=obj -relocation-model=pic -O2 "$b.ll" -o "$b.o"
  echo "$b.o"
done
