#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N88 (one H100, nvidia-h100-x1): alloc_loop (host_shared alloc, kernel, host read, dealloc per
# step) runs 1.3-1.4x the tree before issue 19 (runs N85-N87) whatever the reclaimer's gathering,
# most of it outside the library's calls (run N86: the host read). Which of issue 19's additions
# costs it: alloc_loop (LLVM 19 and 22, 2000 steps, 7 rounds interleaved) with the library, its
# headroom checks off, clearing off, tagged stream handles, and the attribution copies of
# benchmarks/neighbour/attribution_variants.py (carried in .gpu/bisect: all3, blocking, noquery,
# noverify), beside the tree before issue 19. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
CFG=$(bisect_configs) || exit 1
V=$R/.gpu/bisect
alloc_loop_rounds 7 "19 22" cached:: headroom0::MGPU_CACHED_ALLOCATOR_HEADROOM=0 \
  zero0::MGPU_CACHED_ALLOCATOR_ZERO=0 tagged::MGPU_CACHED_STREAM_HANDLES=tagged all3:$V/all3/libmgpu_cached.so: \
  blocking:$V/blocking/libmgpu_cached.so: noquery:$V/noquery/libmgpu_cached.so: \
  noverify:$V/noverify/libmgpu_cached.so: before:$B:
cat $O/alloc_loop.md
