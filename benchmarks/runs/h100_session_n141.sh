#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N141 (one H100, nvidia-h100-x1): a heap blob's hit comparison with 512-bit loads on a copy
# laid out at the blob's offset within 64 bytes (csrc/support/same_bytes.c). The host's CPU flags;
# benchmarks/same_bytes_bench.c (memcmp against mc_same_bytes, 3.7 KB and 8 KB); every GPU test
# with the graph path on and off; chain_pair_probe.c (K = 10 and 100, 7 processes each, this tree
# and the session's starting tree, .gpu/start-src). Carry `.gpu` and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
{ lscpu | grep -E "Model name|^CPU\(s\)"; grep -m1 "^flags" /proc/cpuinfo | tr ' ' '\n' |
  grep -E "^(avx512f|avx512bw|avx_vnni|avx512_vnni|amx_tile)$" | tr '\n' ' '; echo; } > $O/cpu.txt
cc -O2 -std=c11 -D_GNU_SOURCE -Icsrc -Ibenchmarks benchmarks/same_bytes_bench.c \
  csrc/support/same_bytes.c -o /tmp/sbb -lm && /tmp/sbb 3700 8080 >> $O/cpu.txt 2>&1
ls -l /tmp/empty.fatbin 2>/dev/null
cat $O/cpu.txt
gpu_tests_on_off 150
cat $O/pytest-gpu.log
chain_split_build || exit 1
chain_pair_build || exit 1
ls -l /tmp/empty.fatbin
chain_pair_rounds 7
