#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N28 (one H100, nvidia-h100-x1): where the allocating async step's host time goes, call by
# call, on run N27's tree beside the tree before issue 19 and this session's starting tree: 600
# traced steps each (benchmarks/trace/call_spans.py --rotation), LLVM 19 and 22, into
# $O/call_spans.md, with the library's counters. Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/async_step.sh
async_bins && START_LABEL=start-1de36e5 async_three_trees "--rotation"
