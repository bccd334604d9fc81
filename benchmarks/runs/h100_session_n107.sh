#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N107 (one H100, nvidia-h100-x1): the review mend of this session's allocator change (a
# hand-out's work mark read before the allocator lock): every GPU test, and sync_pair_probe's
# host_shared patterns (plain, primed) beside stock behaviour, 5 rounds. Carry `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
gpu_tests 150
cc -O2 -o /tmp/spp benchmarks/sync_pair_probe.c $(python3 -m mgpu_cached --ldflags) || exit 1
for m in plain primed; do
  for r in $(seq 5); do
    for c in cached: stock:MGPU_CACHED_DISABLE=1; do
      n=${c%%:*}; v=${c#*:}
      env $v /tmp/spp 1 400 256 4096 524288 $m | while read b us; do echo "$r $b $n $us"; done
    done
  done > $O/pairs_$m.raw
  python3 benchmarks/medians.py $O/pairs_$m.raw us > $O/pairs_$m.md; echo "mode $m"; cat $O/pairs_$m.md
done
