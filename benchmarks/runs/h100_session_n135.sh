#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N135 (one H100, nvidia-h100-x1): issue 21 item 1 measured within each process. Between
# processes the same mode moves by +-5% (runs N133, N134: the bound at 0.95 in one run, 1.05 in the
# next), so throughput.py --paired runs each library shape and the bound in one process, in
# alternating blocks of 5000 launches per thread (16 blocks), 9 processes per shape, this tree
# and the session's starting tree (.gpu/start-src, --before), 1 to 16 threads. Carry `.gpu` and
# `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
timeout 480 python3 benchmarks/conc/throughput.py --paired --launches 5000 --reps 9 \
  --threads 1,2,4,8,16 --before .gpu/start/libmgpu_cached.so > $O/paired_n135.txt 2>&1
echo "rc=$?" >> $O/paired_n135.txt
cat $O/paired_n135.txt
