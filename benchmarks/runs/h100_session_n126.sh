#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N126 (one H100, nvidia-h100-x1): issue 21 item 2, chain replay bare (a chain's first launch
# and its replay's cuGraphLaunch push no context in a thread with none current; the pending-stream
# check without flush_unless's frame). Every GPU test once (the new bare chain test among them),
# then chain_split_probe with this library ("now") and the session's starting tree (0052a8d's C
# code, .gpu/start-src, preloaded: "start"), chain replay on, K = 10 and 100, the LLVM 22 shape,
# the LLVM <= 20 shape with the blob in the executable and on the heap, and the hand-made graph;
# 16 rounds interleaved; tables by benchmarks/chain_split_table.py. Carry `.gpu` and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
gpu_tests 200
chain_split_build || exit 1
chain_split_rounds 16 "10 100"
