#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run M4 (two GPUs, nvidia-h100-x2; timings on device 0): the session's final library. Every GPU
# test with the graph path on and off (the two-GPU tests included); the README's suite side by
# side with stock, the tree before issue 19 (before-391bd88) and this session's starting tree
# (start-9d5fc19), both preloaded, linked as the package is (setup_h100.sh); the allocating
# async step's attribution: the same step with the library's stream proofs made without a driver
# query (attribution_variants.py noquery, preloaded) and with tagged stream handles (the opt-in
# whose sync proves a stream idle), beside the before tree; and the 301-kernel module's first call
# against stock behaviour. Carry `.gpu`, `.whl`. `sh benchmarks/runs/two_gpu_m4.sh`; logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
python3 benchmarks/neighbour/attribution_variants.py csrc /tmp/av > /dev/null || exit 1
mkdir -p /tmp/av/nq && cc $CP -I/tmp/av/noquery/csrc $(find /tmp/av/noquery/csrc -mindepth 2 -name "*.c" | sort) -o /tmp/av/nq/libmgpu_cached.so -ldl || exit 1
gpu_tests_on_off 70
readme_suite 200 0.25 start-9d5fc19
timeout 130 python3 benchmarks/run.py --out /tmp/attr --programs async --llvm 19,22 --rounds 5 --reps 3 \
  --scale 0.25 --skip stock,stock-named,preload --config before-391bd88:LD_PRELOAD=$B \
  --config noquery:LD_PRELOAD=/tmp/av/nq/libmgpu_cached.so --config tagged:MGPU_CACHED_STREAM_HANDLES=tagged > /tmp/attr.log 2>&1
echo "attribution rc=$?" >> /tmp/attr.log
{ grep -E "^\| " /tmp/attr/results.md | head -4; tail -2 /tmp/attr.log; } > $O/async_attribution.md 2>&1
cp /tmp/attr/results.json $O/async_attribution.json 2>/dev/null
timeout 70 python3 benchmarks/first_call.py --out /tmp/fc --rounds 7 --n 200 --reps 3 > $O/first_call.log 2>&1
cat /tmp/fc/*.md > $O/first_call.md 2>/dev/null
cat $O/pytest-gpu.log; cut -c1-250 $O/suite.md; cut -c1-250 $O/async_attribution.md; head -12 $O/first_call.md
