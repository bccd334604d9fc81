#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N58 (one H100, nvidia-h100-x1, the machine of run N57 still held): commit 7b4086d's C code:
# chain replay with the blob in a shared object's .rodata (19ro) beside the starting tree fcecbe0;
# the thread throughput (9 reps) beside the starting tree; the first call of the 301-kernel module.
# Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
for t in now start; do
  pre=""; [ $t = start ] && pre=$S
  LD_PRELOAD=$pre timeout 120 python3 benchmarks/chains.py --out /tmp/ch_$t --k 10,100 --llvm 19ro \
    --rounds 3 --reps 3 --launches 3000 > $O/chains19ro_$t.log 2>&1; echo "rc=$?" >> $O/chains19ro_$t.log
  cp /tmp/ch_$t/chains.md $O/chains19ro_$t.md
  cat $O/chains19ro_$t.md | cut -c1-200 | tail -2
done
timeout 200 python3 benchmarks/conc/throughput.py --launches 20000 --reps 9 --before $S \
  --only "cached,cached llvm19-load,before,before llvm19-load" > $O/throughput.txt 2>&1
echo "rc=$?" >> $O/throughput.txt; tail -8 $O/throughput.txt
first_call_checks 12 10
