#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N79 (one H100, nvidia-h100-x1): issue 19's differential tester on this session's final C code
# (the launch path's look-ups inline): the threads and capture classes, module globals, and the
# stock and ordered profiles' plain programs (300 each, fresh seeds). Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/neighbour_checks.sh
difftest threads_capture 150 --profile stock --classes threads,capture --programs 300 --seed 120
difftest modglobal 100 --profile stock --classes modglobal --programs 300 --seed 121
difftest plain_stock 100 --profile stock --programs 300 --seed 122
difftest plain_ordered 100 --profile ordered --programs 300 --seed 123
grep -h '"differences"' $O/difftest_*.txt | cut -c1-200
