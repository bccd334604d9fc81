#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# One device call, run L8b on the H100 (the session's final library): review 2's GPU program
# (G1-G12, stock and cached side by side), PyTorch in the same process, and the differential
# tester's neighbour classes: the tight memory class (16 MiB beyond the units, both profiles),
# module globals, sticky errors and context resets. Carry `.whl`, `.gpu`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/neighbour_checks.sh
review2_and_torch || exit 1
export DIFFTEST_MARGIN_MB=16
for p in stock ordered; do difftest tight_$p 70 --profile $p --classes pressure --programs 300 --seed 53; done
unset DIFFTEST_MARGIN_MB
difftest modglobal 70 --profile ordered --classes modglobal --programs 600 --seed 59
timeout 150 bash tests/difftest/gpu_validate.sh /tmp/dtf faults > /dev/null 2>&1
cp /tmp/dtf/run.log $O/difftest_faults.txt 2>/dev/null
neighbour_summary; grep -E '"differences"|== |wall' $O/difftest_faults.txt | cut -c1-200
