#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N136 (one H100, nvidia-h100-x1): issue 21 item 1 within each process (throughput.py
# --paired, as run N135) at 4, 8 and 16 threads, 13 processes per shape, with the heap shape also
# against the bound that compares the heap blob per launch (LT_COMPARE: what a verified cache must
# do at every load of a blob it cannot prove unchanged). Carry `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
timeout 480 python3 benchmarks/conc/throughput.py --paired --launches 5000 --reps 13 \
  --threads 4,8,16 > $O/paired_n136.txt 2>&1
echo "rc=$?" >> $O/paired_n136.txt
cat $O/paired_n136.txt
