#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N129 (one H100, nvidia-h100-x1): issue 21 items 2 and 1 with the session's final C code.
# The host's CPU (lscpu); chain_split_probe now / start (0052a8d's C code, .gpu/start-src), K = 10
# and 100, 16 rounds, with the heap shape's comparisons timed apart (compare_us: the heap shape
# against the executable shape plus its comparisons); benchmarks/chains.py (the issue's
# benchmark), K = 10, 12 rounds; thread throughput at 4 threads, 31 reps (the driver loop, the
# three shapes, the bound). Carry `.gpu` and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
lscpu | grep -E "^(Model name|CPU\(s\)|Thread|Core|Socket|NUMA node\(s\)|L1d|L2|L3)" > $O/cpu.txt
lscpu | grep -o -E "avx2|avx512bw" | sort -u >> $O/cpu.txt
cat $O/cpu.txt
chain_split_build || exit 1
chain_split_rounds 16 "10 100" | tail -14
timeout 260 python3 benchmarks/chains.py --out /tmp/ch --k 10 --llvm 22,19,19exe --rounds 12 --reps 3 \
  --launches 3000 > /tmp/chains.log 2>&1; echo "rc=$?" >> /tmp/chains.log
cp /tmp/ch/chains.md /tmp/ch/chains.json $O/ 2>/dev/null; tail -1 /tmp/chains.log
python3 benchmarks/paired.py --chains $O/chains.json > $O/chains_paired.txt 2>&1; cat $O/chains_paired.txt | cut -c1-220
M="cached,cached llvm19-load,cached llvm19-load exe,driver no context + checks"
timeout 200 python3 benchmarks/conc/throughput.py --launches 20000 --reps 31 --diagnose --threads 4 \
  --only "$M" > $O/threads_n129.txt 2>&1; echo "rc=$?" >> $O/threads_n129.txt
cut -c1-250 $O/threads_n129.txt | tail -6
