#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N152 (one H100, nvidia-h100-x1): the session's final C code (the comparison's tail as full
# vectors that stop at the range's last 64 bytes, no masked loads) on the GPU: the host's CPU
# flags and benchmarks/same_bytes_bench.c; every GPU test with the graph path on and off;
# chain_pair_probe.c (streams rotated, graph+same), this tree and the session's starting tree
# (.gpu/start-src), K = 10 and 100, 7 processes each. Carry `.gpu` and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
{ grep -m1 "^flags" /proc/cpuinfo | tr ' ' '\n' | grep -E "^(avx512f|avx_vnni)$" | tr '\n' ' '; echo
  cc -O2 -std=c11 -D_GNU_SOURCE -Icsrc -Ibenchmarks benchmarks/same_bytes_bench.c \
    csrc/support/same_bytes.c -o /tmp/sbb -lm && /tmp/sbb 3688 8080; } > $O/cpu.txt 2>&1
cat $O/cpu.txt
gpu_tests_on_off 150
cat $O/pytest-gpu.log
chain_split_build || exit 1
chain_pair_build || exit 1
chain_pair_rounds 7
