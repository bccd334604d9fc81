#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N47 (one H100, nvidia-h100-x1): the allocator's block records kept for reuse and no headroom
# check at a managed allocation while the cache holds nothing (issue 21 item 3: the untouched
# host_shared pair): the alloc + free(NULL) pairs beside this session's starting tree (e243408,
# "before"); every GPU test; 300 differential-tester programs of the pressure class. Carry `.gpu`,
# `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
. benchmarks/runs/neighbour_checks.sh
ALLOC_BENCH_BEFORE_LIB=$S timeout 200 python3 benchmarks/alloc_bench.py --pairs --rounds 7 > $O/alloc.txt 2>&1
echo "rc=$?" >> $O/alloc.txt; grep -E "kind|^host_shared|^device " $O/alloc.txt
gpu_tests 100
difftest pressure 150 --profile stock --classes pressure --programs 300 --seed 101
grep -h '"differences"' $O/difftest_pressure.txt | cut -c1-200
