#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N3 (one H100, nvidia-h100-x1): the GPU tests with the pools' spare rule
# (MGPU_CACHED_POOL_SPARE_AFTER); the first call against the session's starting tree (.gpu/start,
# built by setup_h100.sh); the driver's small pair beside a small block up to 8 MiB (how far the
# driver shares pages: where MGPU_CACHED_ALLOCATOR_SYNC_DIRECT_MAX should stop); what a one-node
# graph exec costs to build per function against what it saves per launch
# (benchmarks/graph_build_probe.c on 16 empty kernels). Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
timeout 150 python3 -m pytest -q -rf --tb=short tests/gpu/ > $O/pytest-gpu.log 2>&1
tail -4 $O/pytest-gpu.log
mkdir -p /tmp/before && cp .gpu/start/libmgpu_cached.so /tmp/before/
timeout 200 python3 benchmarks/first_call.py --out /tmp/fc --rounds 12 --n 200 --reps 3 \
  --before /tmp/before > $O/first_call.log 2>&1
cat /tmp/fc/first_call.md > $O/first_call.md 2>/dev/null; cat $O/first_call.md
cc -O2 -Ibenchmarks -o /tmp/adp benchmarks/alloc_driver_probe.c -ldl
timeout 150 /tmp/adp 5 > $O/alloc_driver_probe.txt 2>&1; echo "rc=$?" >> $O/alloc_driver_probe.txt
cat $O/alloc_driver_probe.txt
python3 -c "print(''.join('extern \"C\" __global__ void k%d() {}\n' % i for i in range(16)))" > /tmp/k16.cu
nvcc -fatbin -arch=sm_90 -o /tmp/k16.fatbin /tmp/k16.cu
cc -O2 -Ibenchmarks -o /tmp/gbp benchmarks/graph_build_probe.c -ldl
for r in 1 2 3; do timeout 60 /tmp/gbp /tmp/k16.fatbin 16; done > $O/graph_build_probe.txt 2>&1
echo "rc=$?" >> $O/graph_build_probe.txt; cat $O/graph_build_probe.txt
