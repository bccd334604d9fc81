#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N108 (one H100, nvidia-h100-x1): issue 21 item 3 with more rounds on this session's final C
# code: sync_pair_probe's host_shared pairs (plain, primed) and device pairs (plain), 256 B to
# 64 MiB, the library and stock behaviour interleaved, 21 rounds; per-round ratios
# (benchmarks/medians.py --ratio cached stock). Carry `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
cc -O2 -o /tmp/spp benchmarks/sync_pair_probe.c $(python3 -m mgpu_cached --ldflags) || exit 1
for k in hs1:plain hs1:primed hs0:plain; do
  hs=${k%%:*}; hs=${hs#hs}; m=${k#*:}
  for r in $(seq 21); do
    for c in cached: stock:MGPU_CACHED_DISABLE=1; do
      n=${c%%:*}; v=${c#*:}
      env $v /tmp/spp $hs 300 256 4096 65536 524288 1048576 16777216 67108864 $m | \
        while read b us; do echo "$r $b $n $us"; done
    done
  done > $O/pairs_hs${hs}_$m.raw
  python3 benchmarks/medians.py $O/pairs_hs${hs}_$m.raw us --ratio cached stock > $O/pairs_hs${hs}_$m.md
  echo "host_shared=$hs $m"; cat $O/pairs_hs${hs}_$m.md
done
