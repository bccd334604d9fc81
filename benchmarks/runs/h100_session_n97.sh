#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N97 (one H100, nvidia-h100-x1): this session's final C code (the reclaimer gathers frees after
# a free on a stream with work the library enqueued and did not synchronise; each launch notes it
# on the stream's record): every GPU test with the graph path on and off, review 2's gpu_exp.c
# (G1-G12), PyTorch in the same process, the differential tester (threads and capture 1,000,
# module globals and memory pressure 1,000, fresh seeds), and the README's synchronous rows (run.py,
# empty, stencil, large, LLVM 19 and 22, 6 rounds) beside the session's starting tree f4086d2.
# Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
. benchmarks/runs/neighbour_checks.sh
final_code_checks
difftest_two_classes 170
ROUNDS=6 side_by_side sync_final 250 empty,stencil,large --config start-f4086d2:LD_PRELOAD=$S
python3 benchmarks/paired.py $O/sync_final.json cached start-f4086d2 > $O/sync_final_paired.txt 2>&1
cat $O/sync_final_paired.txt
rm -f $O/sync_final.md  # printed above; at most 8 files come back
