#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N96 (one H100, nvidia-h100-x1): the reclaimer gathers frees (50 us) only after a free on a
# stream the library enqueued work on and has not synchronised since (the async step frees on the
# stream of its last kernel; alloc_loop frees on a fresh stream after waiting). The README's async
# rows (run.py, 10 rounds, or $ROUNDS: run N98) with the library, gathering off (RECLAIM_US=0),
# the session's starting tree f4086d2 and the tree before issue 19; alloc_loop (7 rounds) with the
# same four. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
ROUNDS=${ROUNDS:-10} side_by_side async_hint 420 async,async_prealloc --config before-391bd88:LD_PRELOAD=$B \
  --config start-f4086d2:LD_PRELOAD=$S --config r0:MGPU_CACHED_ALLOCATOR_RECLAIM_US=0
python3 benchmarks/paired.py $O/async_hint.json cached before-391bd88 cached start-f4086d2 \
  r0 before-391bd88 cached r0 > $O/async_hint_paired.txt 2>&1
cat $O/async_hint_paired.txt
alloc_loop_rounds 7 "19 22" cached:: r0::MGPU_CACHED_ALLOCATOR_RECLAIM_US=0 start:$S: before:$B:
cat $O/alloc_loop.md
