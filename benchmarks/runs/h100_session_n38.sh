#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N38 (one H100, nvidia-h100-x1): the stop's final C code (run N37's): review 2's gpu_exp.c
# (G1-G12) and PyTorch in the same process; the differential tester's capture, threads and pressure
# classes; issue 19's 3% rule on every program of the README's table (empty, stencil, large, the
# allocating async step, the step with buffers made once), LLVM 19 and 22, 8 rounds, beside the
# tree before issue 19 and this session's starting tree. Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
. benchmarks/runs/neighbour_checks.sh
review2_and_torch
difftest classes 120 --profile stock --classes capture,threads,pressure --programs 500 --seed 89
neighbour_summary
side_by_side readme_rows 330 empty,stencil,large,async,async_prealloc \
  --config before-391bd88:LD_PRELOAD=$B --config start-1de36e5:LD_PRELOAD=$S
