#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N39 (one H100, nvidia-h100-x1): issue 21 items 1 and 2 on the stop's final C code: the thread
# throughput (9 reps, the library, stock behaviour and the driver's push/pop loop), then chain
# replay against the hand-made graph (LLVM 22, 19, 19 with the blob in .rodata). Carry `.gpu`,
# `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
timeout 200 python3 benchmarks/conc/throughput.py --launches 20000 --reps 9 --diagnose \
  --only "cached,stock,driver ctx push/pop" > $O/throughput.txt 2>&1; echo "rc=$?" >> $O/throughput.txt
timeout 150 python3 benchmarks/chains.py --out /tmp/ch --k 10,100 --llvm 22,19,19ro --rounds 3 --reps 3 \
  --launches 3000 > $O/chains.log 2>&1; echo "rc=$?" >> $O/chains.log
cp /tmp/ch/chains.md /tmp/ch/chains.json $O/ 2>/dev/null
tail -30 $O/throughput.txt; cat $O/chains.md; tail -2 $O/chains.log
