#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N34 (one H100, nvidia-h100-x1): the tree with the proof-clock fence, nested relaxed brackets
# and the synchronisation that leaves the stream just given back to a later one: every GPU test;
# review 2's gpu_exp.c (G1-G12) and PyTorch in the same process; the differential tester's
# capture, threads and pressure classes; the allocating async step, the step with buffers made once
# and the empty kernel, 10 rounds, beside the tree before issue 19 and this session's starting
# tree. Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
. benchmarks/runs/neighbour_checks.sh
gpu_tests 120
review2_and_torch
difftest classes 150 --profile stock --classes capture,threads,pressure --programs 600 --seed 83
neighbour_summary
ROUNDS=10 side_by_side async_ab 300 async,async_prealloc,empty --config before-391bd88:LD_PRELOAD=$B \
  --config start-1de36e5:LD_PRELOAD=$S
