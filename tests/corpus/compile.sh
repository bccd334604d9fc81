#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Compile the conformance corpus (src/*.mlir) into x86-64 PIC objects (host code + embedded fatbin)
# with MLIR 19 or 22: obj/<name>_llvmN.o. Objects are committed; rerun after changing a program.
#
# Usage: compile.sh 19|22 [NAME...]        (default: every src/*.mlir)
# Environment:
#   MLIR_BIN_19  dir with mlir-opt, mlir-translate, llc of LLVM 19 (default /usr/lib/llvm-19/bin)
#   MLIR_BIN_22  the same for LLVM 22 (default <checkout>/.toolchains/llvm22/usr/lib/llvm-22/bin: Debian's
#                mlir-22-tools, libmlir-22 and llvm-22 .debs unpacked with `dpkg -x`, next to the
#                system's libllvm22, so that MLIR 19 stays installed; see README.md)
#   CUDA_PATH_DIR  toolkit with bin/ptxas and bin/fatbinary (default /usr/local/cuda)
#   CORPUS_OBJ_DIR where the objects go (default obj/ beside this script; the CPU test compiles
#                  into a temporary one and compares with the committed objects)
# A program whose first line is `// chip: sm_90a` is compiled for sm_90a (TMA, clusters); the
# others for sm_90. Features +ptx80 for both.
# Where the two versions spell an op differently (gpu.printf takes a comma after the format from
# LLVM 20 on), a program writes the line once per version, as `//@19 ...` and `//@22 ...`: the
# prefix of the version compiled is removed, the other line stays a comment.
# A program whose header has `// pre: PIPELINE` is first run through
# `mlir-opt --pass-pipeline='builtin.module(PIPELINE)'` (e.g. subgroup_reduce's redux lowering).
set -eu
V=${1:?usage: compile.sh 19|22 [name...]}
shift
HERE=$(cd "$(dirname "$0")" && pwd)
case "$V" in
  19) BIN=${MLIR_BIN_19:-/usr/lib/llvm-19/bin} ;;
  22) BIN=${MLIR_BIN_22:-$(cd "$(dirname "$0")/../.." && pwd)/.toolchains/llvm22/usr/lib/llvm-22/bin}
      export LD_LIBRARY_PATH="$BIN/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;;
  *) echo "compile.sh: version must be 19 or 22" >&2; exit 2 ;;
esac
CUDA=${CUDA_PATH_DIR:-/usr/local/cuda}
OBJ=${CORPUS_OBJ_DIR:-$HERE/obj}
mkdir -p "$OBJ"; OBJ=$(cd "$OBJ" && pwd)
export CUDA_ROOT="$CUDA" PATH="$CUDA/bin:$PATH"
names=${*:-$(cd "$HERE/src" && ls *.mlir | sed 's/\.mlir$//')}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
status=0
for name in $names; do
  src="$HERE/src/$name.mlir"
  chip=$(sed -n '1s,^// chip: *\(sm_[0-9a-z]*\).*,\1,p' "$src")
  chip=${chip:-sm_90}
  o="$OBJ/${name}_llvm$V.o"
  # run from $T on a relative name: locations baked into the code (LLVM 22's cf.assert message
  # names its file) are then "<name>.mlir", not a temporary path
  sed "s,^\( *\)//@$V ,\1," "$src" > "$T/$name.mlir"
  cd "$T"
  pre=$(sed -n 's,^// pre: *,,p' "$src")
  if [ -n "$pre" ]; then
    "$BIN/mlir-opt" "$name.mlir" --pass-pipeline="builtin.module($pre)" -o "$T/$name.pre.mlir" 2> "$T/$name.err" ||
      { echo "FAILED $name llvm$V (pre: $pre):"; sed 's/^/    /' "$T/$name.err" | head -20; status=1; continue; }
    mv "$T/$name.pre.mlir" "$T/$name.mlir"
  fi
  if "$BIN/mlir-opt" "$name.mlir" \
       --gpu-lower-to-nvvm-pipeline="cubin-chip=$chip cubin-features=+ptx80 cubin-format=fatbin" \
       -o "$T/$name.llvm.mlir" 2> "$T/$name.err" &&
     "$BIN/mlir-translate" --mlir-to-llvmir "$T/$name.llvm.mlir" -o "$T/$name.ll" 2>> "$T/$name.err" &&
     "$BIN/llc" -filetype=obj -relocation-model=pic -O2 "$T/$name.ll" -o "$o" 2>> "$T/$name.err"; then
    echo "ok     $name llvm$V $chip: $(nm -u "$o" | awk '{print $2}' | grep -v '^mgpu' | tr '\n' ' ')+ $(nm -u "$o" | grep -c ' mgpu') mgpu*"
  else
    echo "FAILED $name llvm$V $chip:"; sed 's/^/    /' "$T/$name.err" | head -20
    rm -f "$o"; status=1
  fi
done
exit $status
