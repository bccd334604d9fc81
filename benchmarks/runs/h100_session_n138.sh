#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N138 (one H100, nvidia-h100-x1): issue 21 item 2 within each process. chain_pair_probe.c
# runs the three shapes (LLVM 22; LLVM <= 20 with the blob in the executable; on the heap) and
# the hand-made graph in one process, in alternating blocks, with chain replay on: each shape's
# ratio to the graph blocks on either side of it, the median over rounds. K = 10 (200 chains a
# block, 40 rounds) and K = 100 (60 chains a block, 24 rounds); 7 processes each, this tree
# ("now") and the session's starting tree (.gpu/start-src, "start"), interleaved. Carry `.gpu`
# and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
chain_split_build || exit 1
chain_pair_build || exit 1
E="MGPU_CACHED_GRAPH=1 MGPU_CACHED_CHAIN=1 MGPU_CACHED_STREAM_HANDLES=tagged"
for p in 1 2 3 4 5 6 7; do
  echo "now $(env $E timeout 60 /tmp/cpp /tmp/empty.fatbin 10 200 40)"
  echo "start $(env $E LD_PRELOAD=$S timeout 60 /tmp/cpp /tmp/empty.fatbin 10 200 40)"
  echo "now $(env $E timeout 60 /tmp/cpp /tmp/empty.fatbin 100 60 24)"
  echo "start $(env $E LD_PRELOAD=$S timeout 60 /tmp/cpp /tmp/empty.fatbin 100 60 24)"
done > $O/chain_pair.raw
python3 - $O/chain_pair.raw > $O/chain_pair.md <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    tree, _, js = line.partition(" ")
    try:
        r = json.loads(js)
    except ValueError:
        print("unparsed:", line.strip()); continue
    rows.setdefault((r["k"], tree), []).append(r)
print("| K | tree | processes | LLVM 22 | exe | heap | heap / (exe + compare) | graph µs | compare µs |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for (k, tree), rs in sorted(rows.items()):
    cell = lambda s: "%.3f [%.3f, %.3f]" % (statistics.median(x["ratio"][s] for x in rs),
                                           min(x["ratio"][s] for x in rs), max(x["ratio"][s] for x in rs))
    hc = statistics.median(x["us"]["heap"] / (x["us"]["exe"] + x["compare_us"]) for x in rs)
    print(f"| {k} | {tree} | {len(rs)} | {cell('22')} | {cell('exe')} | {cell('heap')} | {hc:.3f} |"
          f" {statistics.median(x['graph_us'] for x in rs):.2f} | {statistics.median(x['compare_us'] for x in rs):.2f} |")
PY
cat $O/chain_pair.md
