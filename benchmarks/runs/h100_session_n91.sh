#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N91 (one H100, nvidia-h100-x1): where alloc_loop's step (1.2-1.35x the tree before issue 19 in
# runs N85-N90, none of the attribution copies of run N88 explaining it) got slower: alloc_loop
# (LLVM 22, 2000 steps, 5 rounds interleaved) with the library, the tree before issue 19 and every
# 16th commit that changed csrc/ since (carried in .gpu/bis/NN-<commit>/csrc; a flat csrc/ is
# built from its top-level .c files, a layered one from its folders' .c files). Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
LIST=""
for d in .gpu/bis/*; do
  if [ -f $d/csrc/all.c ] || ! ls $d/csrc/*.c >/dev/null 2>&1; then srcs=$(find $d/csrc -mindepth 2 -name "*.c" | sort)
  else srcs=$(ls $d/csrc/*.c | sort); fi
  cc $CP -I$d/csrc $srcs -o $d/libmgpu_cached.so -ldl 2>/dev/null || { echo "build $d failed"; exit 1; }
  LIST="$LIST $(basename $d):$R/$d/libmgpu_cached.so"
done
cc -std=c11 -O2 -o /tmp/al22 benchmarks/alloc_loop_main.c tests/data/mlir/alloc_loop_llvm22.o \
  $(python3 -m mgpu_cached --ldflags) -ldl || exit 1
{
for r in 1 2 3 4 5; do
  for c in before:$R/.gpu/base/libmgpu_cached.so $LIST now:; do
    n=${c%%:*}; pre=${c#*:}
    echo "$r $n $(LD_PRELOAD=$pre /tmp/al22 2000 | cut -d' ' -f1)"
  done
done
} > $O/alloc_loop_bisect_raw.txt 2>&1
python3 - $O/alloc_loop_bisect_raw.txt > $O/alloc_loop_bisect.md <<'PY'
import sys, statistics, collections
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r, n, t = line.split()
    d[n].append(float(t))
print("| tree | µs per step (median of 5) | samples |")
print("| --- | --- | --- |")
for n, v in d.items():
    print(f"| {n} | {statistics.median(v):.2f} | {' '.join('%.1f' % x for x in v)} |")
PY
cat $O/alloc_loop_bisect.md
