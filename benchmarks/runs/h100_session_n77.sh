#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N77 (one H100, nvidia-h100-x1): this session's C code (the launch path's look-ups inline,
# 7% fewer library instructions per synchronous iteration against the fake) on the GPU: every GPU
# test with the graph path on and off, review 2's gpu_exp.c (G1-G12), PyTorch in the same process,
# thread throughput beside the session's starting tree 7e264ec (11 reps), chains beside it (6
# rounds, LLVM 22 and 19exe). Carry `.gpu` (start-src: 7e264ec's csrc), `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
. benchmarks/runs/neighbour_checks.sh
gpu_tests_on_off 150
cat $O/pytest-gpu.log
review2_and_torch
grep -E "^G[0-9]+" $O/gpu_exp.txt | cut -c1-100; grep -E "SUMMARY" $O/torch_neighbour.txt
timeout 120 python3 benchmarks/conc/throughput.py --launches 20000 --reps 11 --diagnose --before $S \
  --only "cached,cached llvm19-load exe,before,driver no context + checks" > $O/throughput_n77.txt 2>&1
echo "rc=$?" >> $O/throughput_n77.txt; cut -c1-200 $O/throughput_n77.txt
for t in now start; do
  pre=""; [ $t = start ] && pre=$S
  LD_PRELOAD=$pre timeout 100 python3 benchmarks/chains.py --out /tmp/ch_$t --k 10,100 --llvm 22,19exe \
    --rounds 6 --reps 3 --launches 3000 > /tmp/chains_$t.log 2>&1; echo "rc=$?" >> /tmp/chains_$t.log
  cp /tmp/ch_$t/chains.json $O/chains_$t.json 2>/dev/null; cut -c1-200 /tmp/ch_$t/chains.md | tail -4; tail -1 /tmp/chains_$t.log
done
