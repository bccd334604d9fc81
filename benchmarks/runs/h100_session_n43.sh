#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N43 (one H100, nvidia-h100-x1): this session's C code (the graph path open to two threads,
# MGPU_CACHED_GRAPH_THREADS=2; a thread's repeated kernel look-up answered from its module entry):
# every GPU test; the thread throughput (9 reps) beside this session's starting tree (preloaded,
# "before"); chain replay against the hand-made graph (LLVM 22, 19, 19 with the blob in .rodata)
# with this library and with the starting tree preloaded (chains_start.md). Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
gpu_tests 240
timeout 200 python3 benchmarks/conc/throughput.py --launches 20000 --reps 9 --before $S \
  --only "cached,cached llvm19-load,before,before llvm19-load" > $O/throughput.txt 2>&1
echo "rc=$?" >> $O/throughput.txt; tail -8 $O/throughput.txt
for t in now start; do
  pre=""; [ $t = start ] && pre=$S
  LD_PRELOAD=$pre timeout 150 python3 benchmarks/chains.py --out /tmp/ch_$t --k 10,100 --llvm 22,19,19ro \
    --rounds 3 --reps 3 --launches 3000 > $O/chains_$t.log 2>&1; echo "rc=$?" >> $O/chains_$t.log
  cp /tmp/ch_$t/chains.md $O/chains_$t.md; cp /tmp/ch_$t/chains.json $O/chains_$t.json 2>/dev/null
  cat $O/chains_$t.md | cut -c1-200; tail -1 $O/chains_$t.log
done
