#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N113 (one H100, nvidia-h100-x1): why the chain links' host cost differs 2x between
# processes (run N111: the launches part of a K = 100 chain, LLVM <= 20 shape, 8-28 µs per
# process). Carry `.gpu` (v1-src: this tree with the module cache's thread cache allocated on
# cache lines of its own) and `.whl`.
#  a) Placement: chain_split_probe pinned to each of the 16 cores in turn (taskset -c), two
#     passes, LLVM <= 20 shape (blob in the executable) and LLVM 22 shape, K = 100.
#  b) Layout: this library against v1 (preloaded), unpinned, 16 rounds interleaved, same shapes.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
mkdir -p .gpu/v1 && cc $CP -I.gpu/v1-src/csrc $(find .gpu/v1-src/csrc -mindepth 2 -name "*.c" | sort) -o .gpu/v1/libmgpu_cached.so -ldl || exit 1
chain_split_build || exit 1
export MGPU_CACHED_GRAPH=1 MGPU_CACHED_CHAIN=1 MGPU_CACHED_STREAM_HANDLES=tagged
nproc > $O/cores.txt
for pass in 1 2; do
  for c in $(seq 0 $(( $(nproc) - 1 ))); do
    for m in mgpu19exe mgpu; do
      echo "$pass $c $(taskset -c $c timeout 60 /tmp/csp /tmp/empty.fatbin $m 100 2000)"
    done
  done
done > $O/cores.raw
python3 - $O/cores.raw > $O/cores.md <<'PY'
import json, sys, collections
d = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    p, c, js = line.split(" ", 2)
    r = json.loads(js)
    d[int(c)][(int(p), r["mode"])] = r["launch_us"]
print("| core | 19exe pass 1 | 19exe pass 2 | 22 pass 1 | 22 pass 2 |  (launches part, µs per K = 100 chain)")
print("| --- | --- | --- | --- | --- |")
for c in sorted(d):
    v = d[c]
    print(f"| {c} | {v.get((1,'mgpu19exe'))} | {v.get((2,'mgpu19exe'))} | {v.get((1,'mgpu'))} | {v.get((2,'mgpu'))} |")
PY
cat $O/cores.md
for r in $(seq 16); do
  for cfg in now: v1:LD_PRELOAD=$R/.gpu/v1/libmgpu_cached.so; do
    n=${cfg%%:*}; v=${cfg#*:}
    for m in mgpu19exe mgpu; do
      echo "$r $n $(env $v timeout 60 /tmp/csp /tmp/empty.fatbin $m 100 2000)"
    done
  done
done > $O/layout.raw
python3 - $O/layout.raw > $O/layout.md <<'PY'
import json, sys, collections, statistics as S
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r, n, js = line.split(" ", 2)
    x = json.loads(js)
    d[(n, x["mode"])].append(x["launch_us"])
print("| library | mode | launches part per process, µs (sorted) | median |")
print("| --- | --- | --- | --- |")
for k in sorted(d):
    v = sorted(d[k])
    print(f"| {k[0]} | {k[1]} | {' '.join(f'{u:.1f}' for u in v)} | {S.median(v):.2f} |")
PY
cat $O/layout.md
