#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N101 (one H100, nvidia-h100-x1): issue 21 item 3 on this session's final C code: the
# alloc + free(NULL) pairs (device and host_shared, 256 B to 64 MiB) beside stock behaviour and the
# tree before issue 19 (391bd88's csrc, "before"), 7 rounds; every GPU test. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
. benchmarks/runs/neighbour_checks.sh
ALLOC_BENCH_BEFORE_LIB=$B timeout 240 python3 benchmarks/alloc_bench.py --pairs --rounds 7 > $O/alloc_pairs.txt 2>&1
echo "rc=$?" >> $O/alloc_pairs.txt; grep -E "kind|^host_shared|^device |rc=" $O/alloc_pairs.txt
gpu_tests 150
tail -3 $O/pytest-gpu.log
