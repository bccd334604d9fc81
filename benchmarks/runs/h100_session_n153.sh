#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N153 (one H100, nvidia-h100-x1): chain replay against the hand-made graph on the SAME driver
# stream (benchmarks/harness/graph_stream_shim.c tells chain_pair_probe.c which driver stream each
# shape's chains were replayed on; the graph also runs on 8 streams of the probe's own), this tree
# (822b6db's C code, which is also the session's starting tree), K = 10 and 100, 10 processes.
# Carry `.gpu` and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
grep -m1 "model name" /proc/cpuinfo > $O/cpu.txt
chain_split_build || exit 1
chain_pair_build || exit 1
chain_pair_same_rounds 10 now
