#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# final_tree.sh START_LABEL - one device call on the H100 for a session's final tree (runs K4a, L8a):
# every GPU test with the graph path on and off, the README's rows side by side with stock, the
# tree before issue 19 (`before-391bd88`) and the session's starting tree (.gpu/start-src, column
# START_LABEL), both preloaded, and the 301-kernel module's first call against the starting tree.
# Carry `.whl`, `.gpu`. Logs under $OUT.
START=${1:?usage: final_tree.sh START_LABEL}
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
gpu_tests_on_off 90
readme_suite 260 0.3 "$START"
mkdir -p /tmp/sb && cp $S /tmp/sb/libmgpu_cached.so
timeout 70 python3 benchmarks/first_call.py --out /tmp/fc --rounds 6 --n 200 --reps 3 --before /tmp/sb > $O/first_call.log 2>&1
cat /tmp/fc/*.md > $O/first_call.md 2>/dev/null
cat $O/pytest-gpu.log; cat $O/suite.md | cut -c1-250; cat $O/first_call.md | head -12
