#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run M3 (two GPUs, nvidia-h100-x2; timings on device 0): every GPU test with the graph path on and
# off (the two-GPU test's expectation mended after run M1; the program's own module unload in the
# caller's capture mode), then issue 21's open rows side by side in one run: chains of 10 / 100
# launches in the LLVM 22, 19 (heap blob) and 19ro (blob in .rodata) shapes, the 301-kernel
# module's first call against stock behaviour, thread throughput with the modes that locate a loss,
# and the managed clear bound beside host_shared alloc + free(NULL) pairs. Carry `.gpu`, `.whl`.
# `sh benchmarks/runs/two_gpu_m3.sh`; logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
S=$R/.gpu/start/libmgpu_cached.so
{ timeout 80 python3 -m pytest -q -rs tests/gpu/ 2>&1 | tail -3; echo "== MGPU_CACHED_GRAPH=0";
  MGPU_CACHED_GRAPH=0 timeout 80 python3 -m pytest -q -rs tests/gpu/ 2>&1 | tail -3; } > $O/pytest-gpu.log
timeout 110 python3 benchmarks/chains.py --out /tmp/ch --k 10,100 --llvm 22,19,19ro --rounds 3 --reps 3 --launches 3000 > $O/chains.log 2>&1
cp /tmp/ch/chains.md $O/ 2>/dev/null
timeout 90 python3 benchmarks/first_call.py --out /tmp/fc --rounds 10 --n 200 --reps 3 > $O/first_call.log 2>&1
cat /tmp/fc/*.md > $O/first_call.md 2>/dev/null
timeout 80 python3 benchmarks/conc/throughput.py --launches 1500 --reps 3 --before $S --diagnose > $O/throughput.txt 2>&1
echo "rc=$?" >> $O/throughput.txt
cc -O2 -Ibenchmarks -o /tmp/mcp benchmarks/managed_clear_probe.c -ldl -lm && timeout 40 /tmp/mcp 21 > $O/managed_clear_probe.txt 2>&1
timeout 80 python3 benchmarks/alloc_bench.py --pairs --rounds 5 > $O/alloc.txt 2>&1
echo "rc=$?" >> $O/alloc.txt
cat $O/pytest-gpu.log; grep -E "^\| " $O/chains.md; head -14 $O/first_call.md; tail -14 $O/throughput.txt
cat $O/managed_clear_probe.txt | head -30; cat $O/alloc.txt
