#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N88 (one H100, nvidia-h100-x1): alloc_loop (host_shared alloc, kernel, host read, dealloc per
# step) runs 1.3-1.4x the tree before issue 19 (runs N85-N87) whatever the reclaimer's gathering,
# most of it outside the library's calls (run N86: the host read). Which of issue 19's additions
# costs it: alloc_loop (LLVM 19 and 22, 2000 steps, 7 rounds interleaved) with the library, its
# headroom checks off, clearing off, tagged stream handles, and the attribution copies of
# benchmarks/neighbour/attribution_variants.py (carried in .gpu/bisect: all3, blocking, noquery,
# noverify), beside the tree before issue 19. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
CFG=$(bisect_configs) || exit 1
V=$R/.gpu/bisect
for v in 19 22; do
  cc -std=c11 -O2 -o /tmp/al$v benchmarks/alloc_loop_main.c tests/data/mlir/alloc_loop_llvm$v.o \
    $(python3 -m mgpu_cached --ldflags) -ldl || exit 1
done
{
for r in 1 2 3 4 5 6 7; do for v in 19 22; do
  for c in cached:: headroom0::MGPU_CACHED_ALLOCATOR_HEADROOM=0 zero0::MGPU_CACHED_ALLOCATOR_ZERO=0 \
      tagged::MGPU_CACHED_STREAM_HANDLES=tagged all3:$V/all3/libmgpu_cached.so: \
      blocking:$V/blocking/libmgpu_cached.so: noquery:$V/noquery/libmgpu_cached.so: \
      noverify:$V/noverify/libmgpu_cached.so: before:$B:; do
    n=${c%%:*}; rest=${c#*:}; pre=${rest%%:*}; e=${rest#*:}
    t=$(env LD_PRELOAD=$pre $e /tmp/al$v 2000 | cut -d' ' -f1)
    echo "$r $v $n $t"
  done
done; done
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
