#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N127 (one H100, nvidia-h100-x1, the machine of run N126): issue 21 items 1 and 2.
# Thread throughput (benchmarks/conc/throughput.py --diagnose) at 4 and 16 threads, 15 reps
# interleaved: the driver loop, the library in the LLVM >= 21 shape and the load-per-launch shape
# (blob on the heap and in the executable), and the driver's own loop with no context current
# plus the library's two checks (the bound); then benchmarks/chains.py (the benchmark),
# K = 10, 4 rounds. Carry `.gpu` and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
M="cached,cached llvm19-load,cached llvm19-load exe,driver no context + checks"
timeout 300 python3 benchmarks/conc/throughput.py --launches 20000 --reps 15 --diagnose --threads 4,16 \
  --only "$M" > $O/threads_n127.txt 2>&1; echo "rc=$?" >> $O/threads_n127.txt
cut -c1-250 $O/threads_n127.txt | tail -30
timeout 200 python3 benchmarks/chains.py --out /tmp/ch --k 10 --llvm 22,19,19exe --rounds 4 --reps 3 \
  --launches 3000 > /tmp/chains.log 2>&1; echo "rc=$?" >> /tmp/chains.log
cp /tmp/ch/chains.md /tmp/ch/chains.json $O/ 2>/dev/null; tail -1 /tmp/chains.log
python3 benchmarks/paired.py --chains $O/chains.json > $O/chains_paired.txt 2>&1; cat $O/chains.md $O/chains_paired.txt | cut -c1-220
