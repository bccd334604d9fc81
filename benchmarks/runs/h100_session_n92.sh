#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N92 (one H100, nvidia-h100-x1): this session's final C code (the reclaimer's fence asks each
# library stream first and records events only where work is in flight; gathering off by default,
# as before) on the GPU: every GPU test with the graph path on and off, review 2's gpu_exp.c
# (G1-G12), PyTorch in the same process, the README's async rows (run.py, 8 rounds) beside the
# session's starting tree f4086d2 (.gpu/start-src) and the tree before issue 19, and alloc_loop
# (LLVM 22, 5 rounds) beside both. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
. benchmarks/runs/neighbour_checks.sh
final_code_checks
side_by_side async_final 300 async,async_prealloc --config before-391bd88:LD_PRELOAD=$B \
  --config start-f4086d2:LD_PRELOAD=$S
python3 benchmarks/paired.py $O/async_final.json cached before-391bd88 cached start-f4086d2 \
  > $O/async_final_paired.txt 2>&1
cat $O/async_final_paired.txt
cc -std=c11 -O2 -o /tmp/al22 benchmarks/alloc_loop_main.c tests/data/mlir/alloc_loop_llvm22.o \
  $(python3 -m mgpu_cached --ldflags) -ldl || exit 1
for r in 1 2 3 4 5; do for c in now: start:$S before:$B; do
  n=${c%%:*}; pre=${c#*:}; echo "$r $n $(LD_PRELOAD=$pre /tmp/al22 2000 | cut -d' ' -f1)"
done; done > $O/alloc_loop_raw.txt 2>&1
python3 -c "
import sys, statistics, collections
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r, n, t = line.split(); d[n].append(float(t))
for n, v in d.items(): print(n, 'median %.2f us/step' % statistics.median(v), v)
" $O/alloc_loop_raw.txt > $O/alloc_loop.txt
cat $O/alloc_loop.txt
