#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N87 (one H100, nvidia-h100-x1): the reclaimer gathers frees (50 us) only while the device is
# busy (its last fence found work in flight). The README's async rows (run.py, 8 rounds) and
# alloc_loop (7 rounds), with the library, gathering off (RECLAIM_US=0), the fixed 50 us gathering
# of eb4d403 (.gpu/bisect/fixed50) and the tree before issue
# 19; and benchmarks/managed_rotation_probe.c (a host-read loop going round K managed blocks).
# Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
CFG=$(bisect_configs) || exit 1
F=$R/.gpu/bisect/fixed50/libmgpu_cached.so
cc -O2 -Ibenchmarks -o /tmp/rot benchmarks/managed_rotation_probe.c -ldl -lm && /tmp/rot 7 > $O/managed_rotation.txt 2>&1
cat $O/managed_rotation.txt
side_by_side async_adaptive 330 async,async_prealloc --config before-391bd88:LD_PRELOAD=$B \
  --config r0:MGPU_CACHED_ALLOCATOR_RECLAIM_US=0 --config fixed50:LD_PRELOAD=$F
python3 benchmarks/paired.py $O/async_adaptive.json cached before-391bd88 r0 before-391bd88 \
  fixed50 before-391bd88 > $O/async_adaptive_paired.txt 2>&1
cat $O/async_adaptive_paired.txt
alloc_loop_rounds 7 "19 22" cached::MGPU_CACHED_ALLOCATOR_RECLAIM_US=50 \
  r0::MGPU_CACHED_ALLOCATOR_RECLAIM_US=0 fixed50:$F:MGPU_CACHED_ALLOCATOR_RECLAIM_US=50 \
  before:$B:MGPU_CACHED_ALLOCATOR_RECLAIM_US=0
cat $O/alloc_loop.md
