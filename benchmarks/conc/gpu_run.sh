#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The GPU runs of issue 4 (concurrency); their results were superseded by later runs and left the
# tree (git show c3b5041:benchmarks/results/h100-concurrency/COMMAND.md; benchmarks/results/README.md
# says which runs back today's numbers). Run from the repository root after `pip install .`:
#   benchmarks/conc/gpu_run.sh OUT_DIR [full|multigpu]
# BEFORE_LIB=path (multigpu): also compare launch throughput with that build of the library.
set -u
OUT=${1:?usage: gpu_run.sh OUT_DIR [full|multigpu]}
WHAT=${2:-full}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv > "$OUT/device.txt" 2>&1
if [ "$WHAT" = full ]; then
  python3 -m pytest -v -rs tests/gpu/ > "$OUT/pytest-gpu.log" 2>&1; echo "pytest rc=$?" >> "$OUT/pytest-gpu.log"
  python3 benchmarks/conc/overlap.py > "$OUT/overlap.txt" 2>&1
  python3 benchmarks/conc/throughput.py > "$OUT/throughput.txt" 2>&1
else
  python3 -m pytest -v -rs tests/gpu/ > "$OUT/pytest-gpu.log" 2>&1; echo "pytest rc=$?" >> "$OUT/pytest-gpu.log"
  cc -std=c11 -O2 -pthread -o /tmp/multigpu tests/data/conc/multigpu.c tests/data/conc/conc_llvm22.o $(mgpu-cached --ldflags) -ldl
  N=$(nvidia-smi -L | wc -l)
  for mode in seq threads; do
    for dis in 0 1; do
      echo "== multigpu $N $mode 2000, MGPU_CACHED_DISABLE=$dis"
      MGPU_CACHED_DISABLE=$dis MGPU_CACHED_STATS=1 timeout 120 /tmp/multigpu "$N" $mode 2000 2>&1
      echo "exit $?"
    done
  done > "$OUT/multigpu.txt" 2>&1
  python3 benchmarks/conc/overlap.py --reps 3 > "$OUT/overlap.txt" 2>&1
  if [ -n "${BEFORE_LIB:-}" ]; then
    CUDA_VISIBLE_DEVICES=0 python3 benchmarks/conc/throughput.py --before "$BEFORE_LIB" > "$OUT/throughput.txt" 2>&1
  fi
fi
