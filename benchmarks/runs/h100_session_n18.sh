#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N18 (one H100, nvidia-h100-x1): after the untouched host_shared free and the gate's own cache
# line: every GPU test; the alloc + free(NULL) pairs (benchmarks/alloc_bench.py --pairs) beside
# stock behaviour and this session's starting tree (.gpu/start-src, carried). Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
gpu_tests 150
ALLOC_BENCH_BEFORE_LIB=$R/.gpu/start/libmgpu_cached.so timeout 200 python3 benchmarks/alloc_bench.py \
  --pairs --rounds 5 > $O/alloc.txt 2>&1; echo "rc=$?" >> $O/alloc.txt; cat $O/alloc.txt
