#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run M7 (one H100, nvidia-h100-x1): the final library after the first-call change (a fatbin's
# module-state verdict reads the entries the device loads: no decompressor for MLIR's compressed
# PTX beside an sm_90 cubin, no helper thread for a header-only scan). Every GPU test with the
# graph path on and off; the 301-kernel module's first call against stock behaviour and this
# session's starting tree (start-9d5fc19, `before` column). Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
S=$R/.gpu/start/libmgpu_cached.so
{ timeout 80 python3 -m pytest -q -rf tests/gpu/ 2>&1 | tail -4; echo "== MGPU_CACHED_GRAPH=0";
  MGPU_CACHED_GRAPH=0 timeout 80 python3 -m pytest -q -rf tests/gpu/ 2>&1 | tail -4; } > $O/pytest-gpu.log
mkdir -p /tmp/sb && cp $S /tmp/sb/libmgpu_cached.so
timeout 150 python3 benchmarks/first_call.py --out /tmp/fc --rounds 10 --n 200 --reps 3 --before /tmp/sb > $O/first_call.log 2>&1
cat /tmp/fc/*.md > $O/first_call.md 2>/dev/null
cat $O/pytest-gpu.log; head -14 $O/first_call.md
