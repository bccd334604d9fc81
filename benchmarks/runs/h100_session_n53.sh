#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N53 (one H100, nvidia-h100-x1): issue 21 item 5 on the stop's final C code: the first call of
# the 301-kernel module, call by call (12 processes) and beside stock behaviour and this session's
# starting tree (e243408; first_call.py, 10 rounds). Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
first_call_checks 12 10
