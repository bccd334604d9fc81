#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N93 (one H100, nvidia-h100-x1): issue 19's differential tester on this session's final C code
# (the reclaimer's fence asks each library stream first): threads and capture 2,500, module globals
# and memory pressure 2,000, plain stock 2,000 and ordered 2,000 programs, fresh seeds (run N79's
# PART=B classes and limits). Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/neighbour_checks.sh
difftest threads_capture 170 --profile stock --classes threads,capture --programs 2500 --seed 150
difftest modglobal_pressure 130 --profile stock --classes modglobal,pressure --programs 2000 --seed 151
difftest plain_stock 90 --profile stock --programs 2000 --seed 152
difftest plain_ordered 90 --profile ordered --programs 2000 --seed 153
grep -h '"differences"' $O/difftest_*.txt | cut -c1-200
