#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N76 (one H100, nvidia-h100-x1), on 7e264ec's C code: whether the spread between processes of
# the same build (a K = 10 chain moved by ~2 us, runs N72 / N75) comes from where a process runs.
# The machine's CPU and GPU topology, then chains (K = 10 / 100, LLVM 22 and 19exe, 8 rounds)
# unpinned and with every process on the CPUs of the GPU's NUMA node (taskset, inherited by the
# children), then the async rows beside the tree before issue 19 pinned (12 rounds).
# Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
{ nvidia-smi topo -m; lscpu | grep -Ei "numa|model name|^cpu\(s\)|mhz"; } > $O/topology.txt 2>&1
cat $O/topology.txt
LOCAL=$(nvidia-smi topo -m 2>/dev/null | awk '/^GPU0/ {for (i=2;i<=NF;i++) if ($i ~ /^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$/) {print $i; exit}}')
echo "GPU0 CPU affinity: ${LOCAL:-unknown}"
[ -n "$LOCAL" ] || LOCAL=0-7
for p in unpinned pinned; do
  pre=""; [ $p = pinned ] && pre="taskset -c $LOCAL"
  $pre timeout 150 python3 benchmarks/chains.py --out /tmp/ch_$p --k 10,100 --llvm 22,19exe \
    --rounds 8 --reps 3 --launches 3000 > $O/chains_$p.log 2>&1; echo "rc=$?" >> $O/chains_$p.log
  cp /tmp/ch_$p/chains.md $O/chains_$p.md; cp /tmp/ch_$p/chains.json $O/chains_$p.json 2>/dev/null
  cut -c1-200 $O/chains_$p.md | tail -4
done
export O R
ROUNDS=12 taskset -c $LOCAL sh -c '. benchmarks/runs/tree_checks.sh; side_by_side async_pinned 200 async,async_prealloc --config before-391bd88:LD_PRELOAD=$B'
