#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N84 (one H100, nvidia-h100-x1): why gathering frees (MGPU_CACHED_ALLOCATOR_RECLAIM_US=50) made
# the MLIR alloc_loop (host_shared alloc, kernel, host read, dealloc per step) slower in run N83:
# alloc_loop (LLVM 19 and 22, 2000 steps, 7 rounds, configurations interleaved) with gathering 0 /
# 50 / 200 us, each with and without clearing (MGPU_CACHED_ALLOCATOR_ZERO=0), and the allocator's
# counters of one more run. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
for v in 19 22; do
  cc -std=c11 -O2 -o /tmp/al$v benchmarks/alloc_loop_main.c tests/data/mlir/alloc_loop_llvm$v.o \
    $(python3 -m mgpu_cached --ldflags) -ldl || exit 1
done
CONFIGS="r0:0:1 r50:50:1 r200:200:1 r0z0:0:0 r50z0:50:0 r200z0:200:0"
{
for r in 1 2 3 4 5 6 7; do for v in 19 22; do for c in $CONFIGS; do
  n=${c%%:*}; rest=${c#*:}; us=${rest%%:*}; z=${rest#*:}
  t=$(MGPU_CACHED_ALLOCATOR_RECLAIM_US=$us MGPU_CACHED_ALLOCATOR_ZERO=$z /tmp/al$v 2000 | cut -d' ' -f1)
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
print("\nµs per step, median of 7 interleaved rounds; rN: MGPU_CACHED_ALLOCATOR_RECLAIM_US=N, z0: MGPU_CACHED_ALLOCATOR_ZERO=0")
PY
for c in $CONFIGS; do
  n=${c%%:*}; rest=${c#*:}; us=${rest%%:*}; z=${rest#*:}
  MGPU_CACHED_ALLOCATOR_RECLAIM_US=$us MGPU_CACHED_ALLOCATOR_ZERO=$z MGPU_CACHED_STATS_FILE=/tmp/st.json /tmp/al22 2000 > /dev/null
  python3 -c "import json,sys; s=json.load(open('/tmp/st.json')); s=s.get('counters', s); print(sys.argv[1], {k: v for k, v in s.items() if k.startswith('alloc_') and v})" $n
done >> $O/alloc_loop.md 2>&1
cat $O/alloc_loop.md | cut -c1-400
