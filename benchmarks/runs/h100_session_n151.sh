#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N151 (one H100, nvidia-h100-x1): the session's final C code (the automatic backend choice no
# longer looks for the HIP runtime on a machine without /dev/kfd): every GPU test with the graph
# path on and off; the first call of the 301-kernel module beside the session's starting tree
# (.gpu/start-src), 12 rounds; whether this host has /dev/kfd and how many paths a failing dlopen
# of libamdhip64.so tries here (strace, if installed). Carry `.gpu` and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
{ ls -l /dev/kfd 2>&1; command -v strace || echo "no strace"; } > $O/host.txt
gpu_tests_on_off 150
cat $O/pytest-gpu.log
timeout 300 python3 benchmarks/first_call.py --out /tmp/fc --rounds 12 --n 200 --reps 3 \
  --before .gpu/start > $O/first_call.log 2>&1
echo "rc=$?" >> $O/first_call.log
cp /tmp/fc/first_call.md /tmp/fc/first_call.json $O/ 2>/dev/null
tail -3 $O/first_call.log; cat $O/first_call.md; cat $O/host.txt
