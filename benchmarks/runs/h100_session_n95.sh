#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N95 (one H100, nvidia-h100-x1): the final C code (the new counter alloc_gathers moved to the
# end of the counters, so the others keep their offsets; run N94 measured it in the middle): the
# README's async rows (run.py, 12 rounds) beside the session's starting tree f4086d2 and the tree
# before issue 19. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
ROUNDS=12 side_by_side async_final 450 async,async_prealloc --config before-391bd88:LD_PRELOAD=$B \
  --config start-f4086d2:LD_PRELOAD=$S
python3 benchmarks/paired.py $O/async_final.json cached before-391bd88 cached start-f4086d2 \
  start-f4086d2 before-391bd88 > $O/async_final_paired.txt 2>&1
cat $O/async_final_paired.txt
