#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# One device call, run L11 on the H100: the final tree (after run L8b, the graph path's argument-set
# execs changed) through review 2's GPU program, PyTorch in the same process and the neighbour
# classes of the differential tester: run L8b's script, then the capture and threads classes
# (300 programs each, mixed with module globals). Carry `.whl`, `.gpu`. Logs under $OUT.
set -u
sh benchmarks/runs/h100_session_l8b.sh
O=${OUT:-/tmp/out}
export PYTHONPATH=/tmp/site  # the cffi wheel setup_h100.sh installed (its export ended with its shell)
timeout 120 python3 tests/difftest/difftest.py --timeout 20 --profile ordered --classes capture,threads,modglobal \
  --programs 300 --seed 61 --minimise 1 --minimise-budget 10 --out /tmp/dt-cap > $O/difftest_capture_threads.txt 2>&1
grep -h '"differences"' $O/difftest_capture_threads.txt | cut -c1-160
