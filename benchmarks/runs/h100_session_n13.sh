#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N13 (one H100, nvidia-h100-x1): run N12 put the final tree's ~0.1 us per synchronous launch
# on graph_launch.c's code, not on the configuration. Variants built alike and preloaded
# (.gpu/bisect/*, carried): b1bf448; the final tree; the final tree with the early-launch check
# not marked cold; both trees with every function aligned to 64 bytes (a folder holding ALIGN).
# The synchronous rows, 8 rounds. Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
CFG=""
for d in .gpu/bisect/*; do
  n=$(basename $d); X=""; [ -f $d/ALIGN ] && X="-falign-functions=64"
  cc $CP $X -I$d/csrc $(find $d/csrc -name "*.c" | sort) -o $d/libmgpu_cached.so -ldl || exit 1
  CFG="$CFG --config c-$n:LD_PRELOAD=$R/$d/libmgpu_cached.so"
done
timeout 450 python3 benchmarks/run.py --out /tmp/ab --programs empty,stencil,large --llvm 19,22 --rounds 8 \
  --reps 3 --scale 0.3 --skip stock,stock-named,preload $CFG > /tmp/ab.log 2>&1
echo "rc=$?" >> /tmp/ab.log; { sed -n 1,14p /tmp/ab/results.md; tail -2 /tmp/ab.log; } > $O/variants_ab.md 2>&1
cp /tmp/ab/results.json $O/variants_ab.json 2>/dev/null; cut -c1-460 $O/variants_ab.md
