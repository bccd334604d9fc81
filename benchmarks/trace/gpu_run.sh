#!/bin/bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# gpu_run.sh - the H100 run of the trace (issue 15), one device-tool call, from the worktree root:
#   bash benchmarks/trace/gpu_run.sh OUTDIR
# Installs the package, then
#   1. traces the benchmark suite's async step (LLVM 19 and 22 objects) with GPU spans:
#      async_llvmV.json, report.txt (mgpu-cached report, overlap_steps.py), async_llvmV.png
#      (--plot), and the same step in stock behaviour (host spans) for comparison (report.txt);
#   2. callcost (benchmarks/harness/callcost.c) against main without the trace (7d687ac, exported
#      into .base/ with `git archive 7d687ac csrc build_runtime.py pyproject.toml`, which the branch
#      merged) and this branch with the trace off, on (host spans) and on with GPU spans,
#      interleaved: callcost.txt;
#   3. the test suite, GPU tests included (tests/gpu/test_trace_gpu.py): pytest-gpu.log;
#   4. if Nsight Systems is installed, the NVTX ranges it sees: nsys.txt.
# Everything else goes to run.log.
set -u
OUT=${1:?usage: gpu_run.sh OUTDIR}
mkdir -p "$OUT"
exec > >(tee "$OUT/run.log") 2>&1
ROOT=$(pwd)
CUDA=${CUDA_HOME:-/usr/local/cuda}
echo "== device"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nvcc --version | tail -2
python3 -m pip install -q --no-index --no-deps --target /tmp/site ../../.whl/*.whl
export PYTHONPATH=/tmp/site
python3 -c "import matplotlib" 2>/dev/null ||
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .mplwhl/*.whl
python3 -m pip install -q --no-deps --no-build-isolation . || exit 1
cd /tmp
LIB=$(python3 -m mgpu_cached --libdir)
echo "library: $LIB"
CFLAGS="-std=c11 -D_GNU_SOURCE -O2 -I$ROOT/benchmarks/harness"
STUBS="-L$CUDA/lib64/stubs -lcuda"
[ -e "$CUDA/lib64/stubs/libcuda.so" ] || STUBS="-l:libcuda.so.1"

for V in 19 22; do
  echo "== 1. trace of the async step (LLVM $V)"
  gcc $CFLAGS -DPROG_ASYNC -o /tmp/async$V "$ROOT/benchmarks/harness/harness.c" \
    "$ROOT/tests/data/mlir/async_step_llvm$V.o" -L"$LIB" -lmgpu_cached -Wl,-rpath,"$LIB" -lm || exit 1
  python3 -m mgpu_cached trace -o "$OUT/async_llvm$V.json" -- /tmp/async$V 100 1 10
  {
    echo "\$ mgpu-cached report async_llvm$V.json --plot async_llvm$V.png"
    python3 -m mgpu_cached report "$OUT/async_llvm$V.json" --plot "$OUT/async_llvm$V.png"
    echo
    echo "\$ python3 benchmarks/trace/overlap_steps.py async_llvm$V.json"
    python3 "$ROOT/benchmarks/trace/overlap_steps.py" "$OUT/async_llvm$V.json"
    echo
    echo "\$ MGPU_CACHED_DISABLE=1 mgpu-cached trace --no-gpu -o stock$V.json -- async$V 100 1 10; mgpu-cached report stock$V.json"
    MGPU_CACHED_DISABLE=1 python3 -m mgpu_cached trace --no-gpu -o /tmp/stock$V.json -- /tmp/async$V 100 1 10
    python3 -m mgpu_cached report /tmp/stock$V.json
    echo
    echo "\$ async$V 100 1 10   (untraced, for the step time)"
    /tmp/async$V 100 1 10
    echo
  } >> "$OUT/report.txt" 2>&1
done
cat "$OUT/report.txt"

echo "== 2. callcost: main without the trace (7d687ac, .base/) vs this branch, trace off / on / on with GPU spans"
( cd "$ROOT/.base" && python3 build_runtime.py /tmp/baselib > /dev/null ) || exit 1
python3 - "$ROOT" <<'PY'
import sys
sys.path.insert(0, sys.argv[1] + "/benchmarks")
from pathlib import Path
from run import extract_blob
Path("/tmp/empty.fatbin").write_bytes(extract_blob(Path(sys.argv[1], "tests/data/mlir/empty_loop_llvm22.o").read_bytes()))
PY
gcc $CFLAGS -I"$CUDA/include" -o /tmp/cc_base "$ROOT/benchmarks/harness/callcost.c" \
  -L/tmp/baselib -lmgpu_cached -Wl,-rpath,/tmp/baselib $STUBS -lm || exit 1
gcc $CFLAGS -I"$CUDA/include" -o /tmp/cc_trace "$ROOT/benchmarks/harness/callcost.c" \
  -L"$LIB" -lmgpu_cached -Wl,-rpath,"$LIB" $STUBS -lm || exit 1
{
  for round in 1 2 3; do
    echo "### round $round: main 7d687ac without the trace (.base/)"
    /tmp/cc_base /tmp/empty.fatbin 4000
    echo "### round $round: this branch, trace off"
    /tmp/cc_trace /tmp/empty.fatbin 4000
  done
  echo "### this branch, MGPU_CACHED_TRACE=FILE (host spans)"
  MGPU_CACHED_TRACE=/tmp/cc_on.json /tmp/cc_trace /tmp/empty.fatbin 4000
  python3 -c "import json; d=json.load(open('/tmp/cc_on.json'))['otherData']; print('# trace file:', d)"
  echo "### this branch, MGPU_CACHED_TRACE=FILE MGPU_CACHED_TRACE_GPU=1"
  MGPU_CACHED_TRACE=/tmp/cc_gpu.json MGPU_CACHED_TRACE_GPU=1 /tmp/cc_trace /tmp/empty.fatbin 4000
  python3 -c "import json; d=json.load(open('/tmp/cc_gpu.json'))['otherData']; print('# trace file:', d)"
} > "$OUT/callcost.txt" 2>&1
cat "$OUT/callcost.txt"

echo "== 3. tests"
( cd "$ROOT" && timeout 300 python3 -m pytest -v -rs -p no:cacheprovider tests/ ) > "$OUT/pytest-gpu.log" 2>&1
echo "pytest rc=$?" >> "$OUT/pytest-gpu.log"
tail -25 "$OUT/pytest-gpu.log"

echo "== 4. NVTX under Nsight Systems"
NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
if [ -n "$NSYS" ]; then
  {
    timeout 120 "$NSYS" profile -t cuda,nvtx -o /tmp/nv --force-overwrite true /tmp/async19 20 1 2
    timeout 60 "$NSYS" stats -q --report nvtx_sum /tmp/nv.nsys-rep
  } > "$OUT/nsys.txt" 2>&1
  tail -30 "$OUT/nsys.txt"
else
  echo "nsys not installed: NVTX not checked on the GPU"
fi
echo "== done"
