#!/bin/bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# review2_layered.sh REVIEW2_DIR [WORKDIR] - run review 2's CPU reproductions (REVIEW2_DIR/run.sh,
# written when csrc/ was flat) on this checkout: a copy of the review's folder whose run.sh finds the
# sources in csrc/'s layer folders (csrc/LAYERS), with -I for each folder, and patches
# csrc/streams/pool.c for R27. Prints the review's lines (benchmarks/results/neighbour/
# review2_cpu_run.txt has the latest output).
set -eu
review=$(cd "${1:?usage: review2_layered.sh REVIEW2_DIR [WORKDIR]}" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
copy=$(mktemp -d)
cp -r "$review/." "$copy/"
python3 - "$copy/run.sh" <<'PY'
import sys
p = sys.argv[1]; t = open(p).read()
t = t.replace('"$src"/csrc/*.c', '$(find "$src/csrc" -name "*.c")')
t = t.replace('INC="-I$src/csrc -I$src/csrc/include',
              'INC="-I$src/csrc $(for d in "$src"/csrc/*/; do printf -- "-I%s " "$d"; done) -I$src/csrc/include')
t = t.replace('"$src/csrc/pool.c" "$w/r27/csrc/pool.c"', '"$src/csrc/streams/pool.c" "$w/r27/csrc/streams/pool.c"')
t = t.replace('"$w/r27/csrc"/*.c', '$(find "$w/r27/csrc" -name "*.c")')
open(p, "w").write(t)
PY
bash "$copy/run.sh" "$root" ${2:+"$2"}
