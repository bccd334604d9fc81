#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N150 (one H100, nvidia-h100-x1): the session's final C code: every GPU test with the graph
# path on and off; the first call of the 301-kernel module (item 5; the library now lays a blob's
# copy out at the blob's offset within 64 bytes) beside the session's starting tree
# (.gpu/start-src), 8 rounds. Carry `.gpu` and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
gpu_tests_on_off 150
cat $O/pytest-gpu.log
timeout 200 python3 benchmarks/first_call.py --out /tmp/fc --rounds 8 --n 200 --reps 3 \
  --before .gpu/start > $O/first_call.log 2>&1
echo "rc=$?" >> $O/first_call.log
cp /tmp/fc/first_call.md /tmp/fc/first_call.json $O/ 2>/dev/null
tail -3 $O/first_call.log; cat $O/first_call.md
