#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N85 (one H100, nvidia-h100-x1): run N84 showed gathering frees slows alloc_loop even without
# clearing, so a round that lands while the program works costs it time. Test: the reclaimer
# waiting by polling (cuEventQuery / cuStreamQuery every ~2 us, a copy of csrc/ carried in
# .gpu/bisect/poll) instead of cuEventSynchronize / cuStreamSynchronize. The README's async rows
# (run.py, 8 rounds) and alloc_loop (7 rounds), each with gathering 0 and 50 us, this tree and the
# polling copy, and the tree before issue 19. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
CFG=$(bisect_configs) || exit 1
P=$R/.gpu/bisect/poll/libmgpu_cached.so
side_by_side async_poll 330 async,async_prealloc --config before-391bd88:LD_PRELOAD=$B \
  --config r0:MGPU_CACHED_ALLOCATOR_RECLAIM_US=0 --config poll:LD_PRELOAD=$P \
  --config poll-r0:LD_PRELOAD=$P,MGPU_CACHED_ALLOCATOR_RECLAIM_US=0
python3 benchmarks/paired.py $O/async_poll.json cached before-391bd88 r0 before-391bd88 \
  poll before-391bd88 poll-r0 before-391bd88 > $O/async_poll_paired.txt 2>&1
cat $O/async_poll_paired.txt
alloc_loop_rounds 7 "19 22" r0::MGPU_CACHED_ALLOCATOR_RECLAIM_US=0 \
  r50::MGPU_CACHED_ALLOCATOR_RECLAIM_US=50 poll-r0:$P:MGPU_CACHED_ALLOCATOR_RECLAIM_US=0 \
  poll-r50:$P:MGPU_CACHED_ALLOCATOR_RECLAIM_US=50 before:$B:MGPU_CACHED_ALLOCATOR_RECLAIM_US=0
cat $O/alloc_loop.md
