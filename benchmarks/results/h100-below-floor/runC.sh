#!/bin/sh
# Run C: the suite's empty and stencil programs with this tree, the tree of run A (66f1f6b) and
# the previous main (19febbd) side by side (LD_PRELOAD), callcost; thread throughput and overlap
# against the build before the graph path (732bc01) and the previous main; mgpu-cached bench.
set -u
O=$OUT
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null; export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation . > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/device.txt 2>&1
R=$(pwd)
timeout 230 python3 benchmarks/run.py --out /tmp/suite --programs empty,stencil --rounds 4 --reps 3 --scale 0.3 --callcost --config runA-66f1f6b:LD_PRELOAD=$R/.gpu/a/libmgpu_cached.so --config main-19febbd:LD_PRELOAD=$R/.gpu/prev/libmgpu_cached.so > $O/suite.log 2>&1; echo "suite rc=$?" >> $O/suite.log
cp /tmp/suite/results.md $O/suite-results.md; cp /tmp/suite/callcost.txt $O/callcost.txt
{ echo "== graph path on (default), before = 732bc01 (before the graph path)"; timeout 60 python3 benchmarks/conc/throughput.py --launches 2000 --reps 3 --before .gpu/old/libmgpu_cached.so 2>&1 | tail -8
  echo "== graph path on (default), before = 19febbd (previous main)"; timeout 60 python3 benchmarks/conc/throughput.py --launches 2000 --reps 3 --before .gpu/prev/libmgpu_cached.so 2>&1 | tail -8
  echo "== overlap"; timeout 40 python3 benchmarks/conc/overlap.py --reps 3 2>&1 | tail -14; } > $O/throughput-overlap.txt 2>&1
timeout 100 mgpu-cached bench --iterations 2000 --rounds 3 > $O/bench.txt 2>&1; echo "bench rc=$?" >> $O/bench.txt
head -12 $O/suite-results.md; tail -1 $O/suite.log; grep -E "Push|LLVM22|graph" $O/callcost.txt | head -12; cat $O/throughput-overlap.txt; cat $O/bench.txt
