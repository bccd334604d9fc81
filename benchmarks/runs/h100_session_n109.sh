#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N109 (one H100, nvidia-h100-x1): the final review mend (pool.c: one live-kind look-up
# function, the busy hint cleared only when set; sync_pair_probe.c built from mgpu_abi.h and
# programs.h): every GPU test with the graph path on and off, and the host_shared pairs
# (plain, primed) beside stock behaviour, 5 rounds, per round. Carry `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
gpu_tests_on_off 150
cc -O2 -Wall -o /tmp/spp benchmarks/sync_pair_probe.c $(python3 -m mgpu_cached --ldflags) || exit 1
for m in plain primed; do
  for r in $(seq 5); do
    for c in cached: stock:MGPU_CACHED_DISABLE=1; do
      n=${c%%:*}; v=${c#*:}
      env $v /tmp/spp 1 300 256 65536 1048576 $m | while read b us; do echo "$r $b $n $us"; done
    done
  done > $O/pairs_$m.raw
  python3 benchmarks/medians.py $O/pairs_$m.raw us --ratio cached stock > $O/pairs_$m.md
  echo "mode $m"; cat $O/pairs_$m.md
done
