#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N100 (one H100, nvidia-h100-x1): issue 21 items 1 and 2 against their bounds with more
# samples, on this session's C code (5b0f7ca's plus the heap hit's counter from the caller's block).
# PART=A: thread throughput at 4 threads, 31 reps (the driver loop; the library in the LLVM >= 21
# shape and the load-per-launch shape with the blob in the executable and on the heap; the driver's
# own loop with no context current plus the library's checks, and with 100 ns of host work spun
# before each launch), then 1/2/8/16 threads with 9 reps. PART=B: chains of 10 and 100 launches
# (LLVM 22, 19 with the blob on the heap, 19exe), 5 rounds. PART=C: 8 and 16 threads, 21 reps (part
# A's 9 reps put the library at 0.92x the driver loop at 16 threads, run N77 at 1.02x). Carry `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
M="cached,cached llvm19-load,cached llvm19-load exe,driver no context + checks,driver no context + checks + 100 ns"
if [ "${PART:-A}" = A ]; then
  timeout 250 python3 benchmarks/conc/throughput.py --launches 20000 --reps 31 --diagnose --threads 4 \
    --only "$M" > $O/threads4_n100.txt 2>&1; echo "rc=$?" >> $O/threads4_n100.txt
  timeout 250 python3 benchmarks/conc/throughput.py --launches 20000 --reps 9 --diagnose --threads 1,2,8,16 \
    --only "$M" > $O/threads_n100.txt 2>&1; echo "rc=$?" >> $O/threads_n100.txt
  cut -c1-220 $O/threads4_n100.txt $O/threads_n100.txt
elif [ "$PART" = C ]; then
  timeout 500 python3 benchmarks/conc/throughput.py --launches 20000 --reps 21 --diagnose --threads 8,16 \
    --only "$M" > $O/threads816_n100.txt 2>&1; echo "rc=$?" >> $O/threads816_n100.txt
  cut -c1-220 $O/threads816_n100.txt
else
  timeout 540 python3 benchmarks/chains.py --out /tmp/ch --k 10,100 --llvm 22,19,19exe --rounds 5 --reps 3 \
    --launches 3000 > /tmp/chains.log 2>&1; echo "rc=$?" >> /tmp/chains.log
  cp /tmp/ch/chains.md /tmp/ch/chains.json $O/ 2>/dev/null; tail -1 /tmp/chains.log
  python3 benchmarks/paired.py --chains $O/chains.json > $O/chains_paired.txt 2>&1; cat $O/chains.md $O/chains_paired.txt | cut -c1-220
fi
