#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# r21_declared.sh - review 2's R21 with its image telling the truth: the review's program
# (r21_modglobal.c) and its own patched fake driver (libfakecuda_glob.so: every module instance
# has a counter, initially 0, that the kernel "bump" returns and increments), but the PTX in
# common.h declares the counter (`.visible .global .align 4 .u32 g_counter;`). R21 prints HAZARD
# because the review's PTX declares no variable while its fake keeps one per module: an image no
# driver can load. Declared, the library finds the module stateful at load and loads it afresh
# each time, as stock does.
# Usage: sh benchmarks/neighbour/r21_declared.sh REVIEW2_DIR [WORKDIR]   (from the project root)
set -eu
rv=$(cd "$1" && pwd); src=$(pwd); w=${2:-$(mktemp -d)}; mkdir -p "$w"
bash "$rv/run.sh" "$src" "$w/r2" > "$w/run.txt" 2>&1 || true   # builds the library and the fakes
mkdir -p "$w/d" && cp "$rv/common.h" "$rv/r21_modglobal.c" "$w/d/"
python3 - "$w/d/common.h" <<'PY'
import sys
p = sys.argv[1]; s = open(p).read()
old = '"//\\n.version 8.0\\n.target sm_90\\n.address_size 64\\n"'
if s.count(old) != 1:
    sys.exit("common.h: the PTX header line is not there once")
open(p, "w").write(s.replace(old, old + '\n    ".visible .global .align 4 .u32 g_counter;\\n"'))
PY
cc -std=c11 -O1 -I"$src/csrc" -I"$src/csrc/include" -I"$src/tests/drivers" -I"$w/d" -o "$w/d/r21_declared" \
  "$w/d/r21_modglobal.c" -L"$w/r2/lib" -lmgpu_cached -Wl,-rpath,"$w/r2/lib" -ldl -pthread
for mode in stock cached; do
  dis=0; [ $mode = stock ] && dis=1
  v=$(env MGPU_CACHED_DISABLE=$dis MGPU_CACHED_BACKEND=cuda MGPU_CACHED_CUDA_DRIVER="$w/r2/libfakecuda_glob.so" \
    FAKECUDA_PARAM_SIZES=8 MGPU_CACHED_STATS=1 "$w/d/r21_declared" 2>"$w/d/stats.$mode" | tail -1)
  echo "$mode: $v; $(grep -E 'module_stateful_loads|driver_module_loads' "$w/d/stats.$mode" | tr -s ' ' | tr '\n' ';')"
done
grep "^R21" "$w/run.txt"
