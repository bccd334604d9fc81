#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N7 (one H100, nvidia-h100-x1): run N6 put the 0.1-0.15 us slower steady launches on the
# exec-threshold commit (ad757a1). Whether the thresholds' effect on the driver (a stream's
# cuLaunchKernel history before its graph launches) or the build is the cause: the same library
# with the old thresholds as a config column (eager: MGPU_CACHED_GRAPH_AFTER=2,
# MGPU_CACHED_GRAPH_FIRST_AFTER=0) beside the default and the starting tree; and the driver alone
# (benchmarks/mixed_stream_probe.c: graph launches on a stream with and without K cuLaunchKernel
# before). Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
cc -O2 -Ibenchmarks -o /tmp/msp benchmarks/mixed_stream_probe.c -ldl
for k in 0 1 32 100 1000; do for r in 1 2 3; do timeout 60 /tmp/msp tests/data/kernels.fatbin $k 30; done; done > $O/mixed_stream_probe.txt 2>&1
cat $O/mixed_stream_probe.txt
side_by_side thresholds_ab 300 empty,large --config start-ac0760c:LD_PRELOAD=$S --config eager:MGPU_CACHED_GRAPH_AFTER=2,MGPU_CACHED_GRAPH_FIRST_AFTER=0
