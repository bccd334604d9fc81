#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N154 (one H100, nvidia-h100-x1): the first call of the LLVM 22 301-kernel module split into
# the driver's time and the library's own (benchmarks/first_call_stages/run.sh, timecuda.c now
# resolving every entry point when it is loaded; 12 processes per mode), then first_call.py
# beside the session's starting tree (.gpu/start-src, 822b6db), 16 rounds; every GPU test with the
# graph path on and off (this tree: a cubin's section names compared with .nv.global in one
# fixed-length comparison). Carry `.gpu` and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
first_call_checks 12 16
gpu_tests_on_off 150
cat $O/pytest-gpu.log
