#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N48 (one H100, nvidia-h100-x1): this session's final C code (a hit on a blob in the
# executable's read-only data asks the loader nothing): chain replay against the hand-made graph in
# the four shapes (LLVM 22; LLVM 19 with the blob in the heap, in a shared object's .rodata, in
# the executable's .rodata), with this library and with the starting tree (e243408) preloaded;
# then the thread throughput, 9 reps, with stock behaviour, the driver's push / pop loop and the
# library in threads whose context is current (the bound from 4 threads on). Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
for t in now start; do
  pre=""; [ $t = start ] && pre=$S
  LD_PRELOAD=$pre timeout 170 python3 benchmarks/chains.py --out /tmp/ch_$t --k 10,100 --llvm 22,19,19ro,19exe \
    --rounds 3 --reps 3 --launches 3000 > $O/chains_$t.log 2>&1; echo "rc=$?" >> $O/chains_$t.log
  cp /tmp/ch_$t/chains.md $O/chains_$t.md; cp /tmp/ch_$t/chains.json $O/chains_$t.json 2>/dev/null
  cut -c1-150 $O/chains_$t.md | tail -8; tail -1 $O/chains_$t.log
done
timeout 220 python3 benchmarks/conc/throughput.py --launches 20000 --reps 9 --diagnose \
  --only "cached,stock,driver ctx push/pop,cached ctx current" > $O/threads.txt 2>&1
echo "rc=$?" >> $O/threads.txt; tail -14 $O/threads.txt
