#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Issue 19 on the H100, call A (one device call from the repository root, with `.whl` (cffi,
# pycparser wheels) and `.gpu` (review2's programs in .gpu/review2, csrc/ of 391bd88 -- the tree
# before this issue -- in .gpu/base-src) carried):
#   - review2's gpu_exp.c, every experiment, with the library's stock behaviour standing in for
#     the stock wrapper (GX_STOCK_DISABLE=1): this tree, G8 again with MGPU_CACHED_STOCK_SYNC=1,
#     and the tree before the issue
#   - every GPU test with the graph path on and off
#   - the PyTorch-in-the-same-process proof (benchmarks/neighbour/torch_neighbour.py)
#   - the differential tester's issue 19 classes on one GPU (tests/difftest/gpu_validate.sh neighbour)
set -u
. benchmarks/neighbour/setup_h100.sh
cc -O1 -std=c11 -D_GNU_SOURCE -o /tmp/gx .gpu/review2/gpu_exp.c -ldl -pthread || exit 1
{
  echo "== this tree $(git rev-parse --short HEAD 2>/dev/null) (stock column: the same library with MGPU_CACHED_DISABLE=1)"
  GX_STOCK_DISABLE=1 timeout 200 /tmp/gx /tmp/libmc.so /tmp/libmc.so
  echo "== this tree, MGPU_CACHED_STOCK_SYNC=1: G8"
  MGPU_CACHED_STOCK_SYNC=1 GX_STOCK_DISABLE=1 timeout 60 /tmp/gx /tmp/libmc.so /tmp/libmc.so G8
  echo "== this tree, MGPU_CACHED_STREAM_HANDLES=tagged: G6"
  MGPU_CACHED_STREAM_HANDLES=tagged GX_STOCK_DISABLE=1 timeout 60 /tmp/gx /tmp/libmc.so /tmp/libmc.so G6
  echo "== the tree before issue 19 (391bd88)"
  GX_STOCK_DISABLE=1 timeout 200 /tmp/gx .gpu/base/libmgpu_cached.so .gpu/base/libmgpu_cached.so
} > $O/gpu_exp.txt 2>&1
{ timeout 150 python3 -m pytest -q -rs tests/gpu/ 2>&1 | tail -8; echo "== MGPU_CACHED_GRAPH=0"; MGPU_CACHED_GRAPH=0 timeout 150 python3 -m pytest -q -rs tests/gpu/ 2>&1 | tail -8; } > $O/pytest-gpu.log
timeout 150 python3 benchmarks/neighbour/torch_neighbour.py --lib /tmp/libmc.so > $O/torch_neighbour.txt 2>&1; echo "rc=$?" >> $O/torch_neighbour.txt
timeout 280 bash tests/difftest/gpu_validate.sh /tmp/dt neighbour > /tmp/dt.out 2>&1; echo "rc=$?" >> /tmp/dt.out
{ cat /tmp/dt.out; cat /tmp/dt/run.log; for f in /tmp/dt/*-differences.txt; do echo "== $f"; head -40 $f; done; } > $O/difftest_neighbour.txt 2>&1
grep -E "passed|failed|FAILED|^E " $O/pytest-gpu.log; tail -12 $O/torch_neighbour.txt; tail -15 $O/difftest_neighbour.txt; cat $O/gpu_exp.txt | cut -c1-400
