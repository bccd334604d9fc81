#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N94 (one H100, nvidia-h100-x1): this session's final C code (the fence as at the session's
# start; the reclaimer's timer slack 1 us and the alloc_gathers counter): every GPU test with the
# graph path on and off, review 2's gpu_exp.c (G1-G12), PyTorch in the same process, the
# differential tester (threads and capture 1,000, module globals and memory pressure 1,000 programs,
# fresh seeds), and the README's async rows (run.py, 8 rounds) beside the session's starting tree
# f4086d2 and the tree before issue 19. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
. benchmarks/runs/neighbour_checks.sh
final_code_checks
difftest_two_classes 160
side_by_side async_final 300 async,async_prealloc --config before-391bd88:LD_PRELOAD=$B \
  --config start-f4086d2:LD_PRELOAD=$S
python3 benchmarks/paired.py $O/async_final.json cached before-391bd88 cached start-f4086d2 \
  > $O/async_final_paired.txt 2>&1
cat $O/async_final_paired.txt
rm -f $O/async_final.md  # printed above; at most 8 files come back
