#!/bin/bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The GPU run of the allocator trust work (branch alloc): the review's H100 reproductions exp0/1/3/4
# in cached and stock mode and with the allocator's switches, the allocator GPU tests, the allocator
# benchmark and the async step of the benchmark suite. Run from the project root on the GPU machine
# with cffi/pycparser wheels in ../../.whl (the device tool's layout); logs go to $OUT.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --target /tmp/site ../../.whl/*.whl && export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation . > "$OUT/install.log" 2>&1
(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; python3 --version) > "$OUT/device.txt" 2>&1
gcc -std=c11 -D_GNU_SOURCE -O2 -fPIC -fvisibility=hidden -pthread -Icsrc $(find csrc -mindepth 2 -name "*.c") -shared -ldl -o libmgpu_cached.so
cc -O1 -o g benchmarks/review/gpu_h100.c -I. libmgpu_cached.so -Wl,-rpath,"$PWD"
{
  for x in 0 1 3 4; do for d in 0 1; do
    echo "== exp$x MGPU_CACHED_DISABLE=$d"; MGPU_CACHED_DISABLE=$d timeout 60 ./g $x; echo "rc=$?"
  done; done
  echo "== exp1 MGPU_CACHED_ALLOCATOR_ORDERED=1 (opt-in; exp1 breaks the stream-ordered rule)"
  MGPU_CACHED_ALLOCATOR_ORDERED=1 timeout 60 ./g 1; echo "rc=$?"
  for x in 3 4; do
    echo "== exp$x MGPU_CACHED_ALLOCATOR_ZERO=0 (opt-out)"; MGPU_CACHED_ALLOCATOR_ZERO=0 timeout 60 ./g $x; echo "rc=$?"
  done
} > "$OUT/gpu_h100.txt" 2>&1
timeout 150 python3 -m pytest -v -rs tests/gpu/test_allocator_gpu.py tests/gpu/test_gpu.py > "$OUT/pytest-gpu.log" 2>&1
echo "pytest rc=$?" >> "$OUT/pytest-gpu.log"
timeout 200 python3 benchmarks/alloc_bench.py --rounds 7 --mlir 2000 > "$OUT/alloc_bench.txt" 2>&1
echo "bench rc=$?" >> "$OUT/alloc_bench.txt"
timeout 120 python3 benchmarks/run.py --out /tmp/suite --programs async,async_prealloc --rounds 3 \
  --reps 5 --scale 0.3 --config cached-zero0:MGPU_CACHED_ALLOCATOR_ZERO=0 > "$OUT/suite-async.log" 2>&1
echo "suite rc=$?" >> "$OUT/suite-async.log"
cp /tmp/suite/results.md "$OUT/suite-async-results.md" 2>/dev/null
