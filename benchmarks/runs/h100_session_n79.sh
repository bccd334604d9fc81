#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N79 (one H100, nvidia-h100-x1): issue 19's differential tester on this session's final C code
# (the launch path's look-ups inline): the threads and capture classes, module globals, and the
# stock and ordered profiles' plain programs (300 each, fresh seeds). With PART=B, on the same
# machine: 8,800 more (threads and capture 2,500, module globals and memory pressure 2,000, plain
# stock 2,000 and ordered 2,000 programs, context resets 300); with PART=C on a fresh machine:
# threads and capture 600, plain stock 600, context resets 100 with a longer limit (PART=B's 300
# did not finish in 60 s). Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/neighbour_checks.sh
if [ "${PART:-A}" = A ]; then
  difftest threads_capture 150 --profile stock --classes threads,capture --programs 300 --seed 120
  difftest modglobal 100 --profile stock --classes modglobal --programs 300 --seed 121
  difftest plain_stock 100 --profile stock --programs 300 --seed 122
  difftest plain_ordered 100 --profile ordered --programs 300 --seed 123
elif [ "$PART" = B ]; then
  difftest threads_capture_b 170 --profile stock --classes threads,capture --programs 2500 --seed 130
  difftest modglobal_pressure_b 130 --profile stock --classes modglobal,pressure --programs 2000 --seed 131
  difftest plain_stock_b 90 --profile stock --programs 2000 --seed 132
  difftest plain_ordered_b 90 --profile ordered --programs 2000 --seed 133
  difftest reset_b 60 --profile stock --classes reset --programs 300 --seed 134
else
  difftest threads_capture_c 60 --profile stock --classes threads,capture --programs 600 --seed 140
  difftest plain_stock_c 40 --profile stock --programs 600 --seed 141
  difftest reset_c 300 --profile stock --classes reset --programs 100 --seed 142
fi
grep -h '"differences"' $O/difftest_*.txt | cut -c1-200
