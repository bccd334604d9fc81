#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The GPU runs of issue 12 (graph launches); what is kept of them is in benchmarks/results/h100-graph/
# (run 2's thread throughput). From the repository root, after `pip install .`:
#   sh benchmarks/runs/h100_graph.sh OUT_DIR tests|bench
#   tests: every GPU test with the graph path on and off, the chain benchmark, mgpu-cached bench
#   bench: every GPU test with the graph path on and off, the MLIR suite (empty loop, stencil,
#          large module; graph on = cached, graph off = config nograph; callcost), thread
#          throughput with the graph path on and off, overlap, the chain benchmark again
set -u
OUT=${1:?usage: gpu_run.sh OUT_DIR tests|bench}
WHAT=${2:-tests}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv > "$OUT/device.txt" 2>&1
if [ "$WHAT" = tests ]; then
  for g in 1 0; do
    MGPU_CACHED_GRAPH=$g timeout 150 python3 -m pytest -q -rs -p no:cacheprovider tests/gpu/ \
      > "$OUT/pytest-gpu-graph$g.log" 2>&1; echo "pytest rc=$?" >> "$OUT/pytest-gpu-graph$g.log"
  done
  timeout 120 python3 benchmarks/chains.py --out "$OUT/chains" --rounds 3 --reps 3 --launches 10000 \
    > "$OUT/chains.log" 2>&1; echo "chains rc=$?" >> "$OUT/chains.log"
  rm -f "$OUT/chains/chain" "$OUT/chains/empty.fatbin"
  timeout 100 mgpu-cached bench --iterations 2000 --rounds 2 > "$OUT/bench.txt" 2> "$OUT/bench.err"
  echo "bench rc=$?" >> "$OUT/bench.txt"
else
  for g in 1 0; do
    MGPU_CACHED_GRAPH=$g timeout 60 python3 -m pytest -q -rs -p no:cacheprovider tests/gpu/ \
      > "$OUT/pytest-gpu-graph$g.log" 2>&1; echo "pytest rc=$?" >> "$OUT/pytest-gpu-graph$g.log"
  done
  timeout 240 python3 benchmarks/run.py --out "$OUT/suite" --rounds 3 --reps 3 --scale 0.5 \
    --programs empty,stencil,large --config nograph:MGPU_CACHED_GRAPH=0 --callcost \
    > "$OUT/suite.log" 2>&1; echo "suite rc=$?" >> "$OUT/suite.log"
  rm -rf "$OUT/suite/build"
  for g in 1 0; do
    echo "== MGPU_CACHED_GRAPH=$g"
    MGPU_CACHED_GRAPH=$g timeout 40 python3 benchmarks/conc/throughput.py --launches 3000 --reps 2
  done > "$OUT/throughput.txt" 2>&1
  timeout 40 python3 benchmarks/conc/overlap.py --reps 1 > "$OUT/overlap.txt" 2>&1
  timeout 50 python3 benchmarks/chains.py --out "$OUT/chains" --rounds 2 --reps 3 --launches 10000 \
    > "$OUT/chains.log" 2>&1; echo "chains rc=$?" >> "$OUT/chains.log"
  rm -f "$OUT/chains/chain" "$OUT/chains/empty.fatbin"
fi
