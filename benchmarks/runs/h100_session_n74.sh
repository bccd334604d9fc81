#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N74 (one H100, nvidia-h100-x1), on 7e264ec's C code: where the library's loss to the driver
# loop at 4 threads comes from (issue 21 item 1). At 2 / 4 / 8 threads, 21 reps: the library as
# shipped and with the graph path off, the driver loop with no context current plus the library's
# two checks, and that loop with 100 / 300 ns of host work spun before each launch (LT_SPIN_NS):
# how much a runtime's own work per launch costs there. Then the library's counters of one
# 4-thread run (graph launches, gate stores). Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
timeout 330 python3 benchmarks/conc/throughput.py --launches 20000 --reps 21 --diagnose --threads 2,4,8 \
  --only "cached,cached graph off,driver no context + checks,driver no context + checks + 100 ns,driver no context + checks + 300 ns" \
  > $O/throughput_n74.txt 2>&1
echo "rc=$?" >> $O/throughput_n74.txt; cat $O/throughput_n74.txt | cut -c1-220
B=benchmarks/conc; T=$(mktemp -d)
printf '\t.section .rodata\n\t.globl chain_blob_start\nchain_blob_start:\n\t.incbin "%s"\n\t.globl chain_blob_end\nchain_blob_end:\n\t.section .note.GNU-stack,"",@progbits\n' \
  "$(pwd)/tests/data/kernels.fatbin" > $T/b.S
cc -std=c11 -O2 -pthread -o $T/lt $B/launch_threads.c $T/b.S $(python3 -c "import mgpu_cached; print(' '.join(mgpu_cached.ldflags_list()))") -ldl
MGPU_CACHED_STATS=1 $T/lt mgpu tests/data/kernels.fatbin 20000 4 > $O/stats_4threads.txt 2>&1
grep -E "mgpu 4|launches|graph|stream_|driver_stream" $O/stats_4threads.txt | head -30
