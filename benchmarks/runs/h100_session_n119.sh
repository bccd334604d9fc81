#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N119 (one H100, nvidia-h100-x1): issue 21 item 2, would a chain submitted in two parts hide
# the library's recording? benchmarks/graph_split_probe.c with the driver alone: a K-node chain of
# the empty kernel as one graph or as two (M nodes, then K - M), with 0 or 126 ns of host work per
# node before each launch (the LLVM <= 20 heap shape's recording, run N115); 8 rounds interleaved.
# Carry `.gpu` and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
chain_split_build || exit 1
cuda=${CUDA_HOME:-/usr/local/cuda}
cul=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from run import cuda_link; print(' '.join(cuda_link('$cuda')))")
cc -std=c11 -D_GNU_SOURCE -O2 -I$cuda/include -o /tmp/gsp benchmarks/graph_split_probe.c $cul -lm || exit 1
for r in $(seq 8); do
  for spin in 0 126; do
    for km in 10:0 10:3 10:5 10:8 100:0 100:8 100:16 100:32 100:50; do
      echo "$r $(timeout 60 /tmp/gsp /tmp/empty.fatbin ${km%%:*} ${km#*:} $spin 2000)"
    done
  done
done > $O/graph_split.raw
python3 - $O/graph_split.raw <<'PY' > $O/graph_split.md
import json, sys, statistics as st
rows = {}
for line in open(sys.argv[1]):
    r, js = line.split(" ", 1)
    d = json.loads(js)
    rows.setdefault((d["k"], d["spin_ns"]), {}).setdefault(d["m"], []).append((int(r), d["total_us"]))
print("| K | spin ns/node | M | total µs (median of rounds) | / one graph (median of per-round ratios) |")
print("| --- | --- | --- | --- | --- |")
for (k, s), ms in sorted(rows.items()):
    one = dict(ms[0])
    for m in sorted(ms):
        v = dict(ms[m])
        ratio = st.median(v[r] / one[r] for r in v if r in one)
        print(f"| {k} | {s:.0f} | {m} | {st.median(v.values()):.2f} | {ratio:.3f}× |")
PY
cat $O/graph_split.md
