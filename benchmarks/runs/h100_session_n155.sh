#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N155 (one H100, nvidia-h100-x1): chain replay's lock as an mc_lock (support/lock.c) against
# the session's starting tree (.gpu/start-src, 822b6db: a pthread mutex): chain_pair_probe.c,
# streams rotated, K = 10 and 100, 12 processes per tree, interleaved; every GPU test with the
# graph path on and off. Carry `.gpu` and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
grep -m1 "model name" /proc/cpuinfo > $O/cpu.txt
gpu_tests_on_off 150
cat $O/pytest-gpu.log
chain_split_build || exit 1
chain_pair_build || exit 1
chain_pair_rounds 12
