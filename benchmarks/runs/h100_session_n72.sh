#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N72 (one H100, nvidia-h100-x1): the open targets of issues 19 and 21 measured on 7e264ec's C
# code with more samples than before, each beside its bound, so each can be decided.
#   PART=A  thread throughput (13 reps: cached, both load shapes, stock behaviour, the driver loop
#           with no context current and with the library's two checks beside it); chain replay
#           (K = 10 / 100, LLVM 22, 19 and 19exe, 5 rounds).
#   PART=B  the README's async rows, 12 rounds, beside the tree before issue 19 and three
#           attribution copies: reused blocks not cleared (MGPU_CACHED_ALLOCATOR_ZERO=0),
#           given-back streams taken without cuStreamQuery (attribution_variants.py noquery) and
#           both together.
#   PART=C  the first call of the 301-kernel module, 30 processes per cell.
# Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
if [ "${PART:-A}" = A ]; then
  timeout 230 python3 benchmarks/conc/throughput.py --launches 20000 --reps 13 --diagnose \
    --only "cached,cached llvm19-load,cached llvm19-load exe,stock,driver no context,driver no context + checks" \
    > $O/throughput_n72.txt 2>&1
  echo "rc=$?" >> $O/throughput_n72.txt; tail -9 $O/throughput_n72.txt | cut -c1-240
  LD_PRELOAD= timeout 230 python3 benchmarks/chains.py --out /tmp/ch --k 10,100 --llvm 22,19,19exe \
    --rounds 5 --reps 3 --launches 3000 > $O/chains_n72.log 2>&1; echo "rc=$?" >> $O/chains_n72.log
  cp /tmp/ch/chains.md $O/chains_n72.md; cp /tmp/ch/chains.json $O/chains_n72.json 2>/dev/null
  cut -c1-220 $O/chains_n72.md | tail -8
elif [ "$PART" = B ]; then
  python3 benchmarks/neighbour/attribution_variants.py csrc /tmp/attr > /dev/null || exit 1
  cc $CP -I/tmp/attr/noquery/csrc $(find /tmp/attr/noquery/csrc -mindepth 2 -name "*.c" | sort) \
    -o /tmp/attr/noquery/libmgpu_cached.so -ldl || exit 1
  Q=/tmp/attr/noquery/libmgpu_cached.so
  ROUNDS=12 side_by_side async_n72 500 async,async_prealloc \
    --config before-391bd88:LD_PRELOAD=$B --config nozero:MGPU_CACHED_ALLOCATOR_ZERO=0 \
    --config noquery:LD_PRELOAD=$Q --config noquery-nozero:LD_PRELOAD=$Q,MGPU_CACHED_ALLOCATOR_ZERO=0
else
  timeout 400 python3 benchmarks/first_call.py --out /tmp/fc --rounds 30 --n 200 --reps 3 \
    > $O/first_call_n72.log 2>&1; echo "rc=$?" >> $O/first_call_n72.log
  cp /tmp/fc/first_call.md $O/first_call_n72.md 2>/dev/null; cat $O/first_call_n72.md
fi
