#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N89 (one H100, nvidia-h100-x1): the reclaimer gathers frees (50 us) unless its last 4 fences
# all found the device idle (run N87 stopped gathering after one idle fence: 1.03-1.06x). The
# README's async rows (run.py, 8 rounds) and alloc_loop (7 rounds), with the library, gathering off
# (RECLAIM_US=0), the fixed 50 us gathering of eb4d403 (.gpu/bisect/fixed50) and the tree before
# issue 19.
# Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
CFG=$(bisect_configs) || exit 1
F=$R/.gpu/bisect/fixed50/libmgpu_cached.so
side_by_side async_adaptive4 330 async,async_prealloc --config before-391bd88:LD_PRELOAD=$B \
  --config r0:MGPU_CACHED_ALLOCATOR_RECLAIM_US=0 --config fixed50:LD_PRELOAD=$F
python3 benchmarks/paired.py $O/async_adaptive4.json cached before-391bd88 r0 before-391bd88 \
  fixed50 before-391bd88 > $O/async_adaptive4_paired.txt 2>&1
cat $O/async_adaptive4_paired.txt
for v in 19 22; do
  cc -std=c11 -O2 -o /tmp/al$v benchmarks/alloc_loop_main.c tests/data/mlir/alloc_loop_llvm$v.o \
    $(python3 -m mgpu_cached --ldflags) -ldl || exit 1
done
{
for r in 1 2 3 4 5 6 7; do for v in 19 22; do for c in cached::50 r0::0 fixed50:$F:50 before:$B:0; do
  n=${c%%:*}; rest=${c#*:}; pre=${rest%%:*}; us=${rest#*:}
  t=$(LD_PRELOAD=$pre MGPU_CACHED_ALLOCATOR_RECLAIM_US=$us /tmp/al$v 2000 | cut -d' ' -f1)
  echo "$r $v $n $t"
done; done; done
} > $O/alloc_loop_raw.txt 2>&1
python3 - $O/alloc_loop_raw.txt > $O/alloc_loop.md <<'PY'
import sys, statistics, collections
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r, v, n, t = line.split()
    d[(v, n)].append(float(t))
names = []
for (v, n) in d:
    if n not in names: names.append(n)
print("| LLVM | " + " | ".join(names) + " |")
print("| --- |" + " --- |" * len(names))
for v in ("19", "22"):
    print(f"| {v} | " + " | ".join("%.2f" % statistics.median(d[(v, n)]) for n in names) + " |")
print("\nalloc_loop, µs per step, median of 7 interleaved rounds")
PY
cat $O/alloc_loop.md
