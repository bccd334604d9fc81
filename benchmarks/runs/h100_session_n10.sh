#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N10 (one H100, nvidia-h100-x1): the session's last tree (after run N9: the early-launch state
# in a struct of its own, the probes on harness/dl_probe.h): every GPU test, the probes once
# more (they now share dl_probe.h), the first call call by call. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
timeout 100 python3 -m pytest -q -rf --tb=short tests/gpu/ > $O/pytest-gpu.log 2>&1
tail -3 $O/pytest-gpu.log
python3 -c "print(''.join('extern \"C\" __global__ void k%d() {}\n' % i for i in range(8)))" > /tmp/k8.cu
nvcc -fatbin -arch=sm_90 -o /tmp/k8.fatbin /tmp/k8.cu
for p in graph_build_probe mixed_stream_probe alloc_driver_probe; do
  cc -O2 -Wall -Ibenchmarks -o /tmp/$p benchmarks/$p.c -ldl || exit 1; done
{ /tmp/graph_build_probe /tmp/k8.fatbin 8; /tmp/mixed_stream_probe tests/data/kernels.fatbin 100 20
  /tmp/alloc_driver_probe 3; } > $O/probes.txt 2>&1; echo "rc=$?" >> $O/probes.txt; cat $O/probes.txt
timeout 100 sh benchmarks/first_call_stages/run.sh 10 > $O/first_call_stages.txt 2>&1; head -14 $O/first_call_stages.txt
