#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N117 (one H100, nvidia-h100-x1): issue 21 items 1 and 2 on this session's final C code
# (3d92440), run N100's measurements again. PART=A: thread throughput at 4 threads (21 reps) and
# at 2, 8 and 16 threads (9 reps): the driver loop, the library in the LLVM >= 21 shape and the
# load-per-launch shape with the blob in the executable and on the heap, and the driver's own
# loop with no context current plus the library's checks (with and without 100 ns spun per
# launch). PART=B: benchmarks/chains.py, K = 10 and 100, LLVM 22, 19 (heap) and 19exe, 8 rounds,
# per-round ratios (benchmarks/paired.py --chains). Carry `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
M="cached,cached llvm19-load,cached llvm19-load exe,driver no context + checks,driver no context + checks + 100 ns"
if [ "${PART:-A}" = A ]; then
  timeout 230 python3 benchmarks/conc/throughput.py --launches 20000 --reps 21 --diagnose --threads 4 \
    --only "$M" > $O/threads4_n117.txt 2>&1; echo "rc=$?" >> $O/threads4_n117.txt
  timeout 300 python3 benchmarks/conc/throughput.py --launches 20000 --reps 9 --diagnose --threads 2,8,16 \
    --only "$M" > $O/threads_n117.txt 2>&1; echo "rc=$?" >> $O/threads_n117.txt
  cut -c1-220 $O/threads4_n117.txt $O/threads_n117.txt
else
  timeout 560 python3 benchmarks/chains.py --out /tmp/ch --k 10,100 --llvm 22,19,19exe --rounds 8 --reps 3 \
    --launches 3000 > /tmp/chains.log 2>&1; echo "rc=$?" >> /tmp/chains.log
  cp /tmp/ch/chains.md /tmp/ch/chains.json $O/ 2>/dev/null; tail -1 /tmp/chains.log
  python3 benchmarks/paired.py --chains $O/chains.json > $O/chains_paired.txt 2>&1; cat $O/chains.md $O/chains_paired.txt | cut -c1-220
fi
