#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N158 (one H100, nvidia-h100-x1): TLS descriptors (-mtls-dialect=gnu2: 39 fewer instructions
# per link of the exe shape against the fake driver) on this tree's C code, side by side:
# "gnu2" and "plain" (this csrc built twice by the same cc line as the compared trees, with and
# without the flag) and "start" (.gpu/start-src, 822b6db), each preloaded; chain_pair_probe.c,
# streams rotated, K = 10, 16 processes per tree, interleaved. Carry `.gpu` and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
grep -m1 "model name" /proc/cpuinfo > $O/cpu.txt
srcs=$(find csrc -mindepth 2 -name "*.c" | sort)
mkdir -p /tmp/gnu2 /tmp/plain
cc $CP -mtls-dialect=gnu2 -Icsrc $srcs -o /tmp/gnu2/libmgpu_cached.so -ldl || exit 1
cc $CP -Icsrc $srcs -o /tmp/plain/libmgpu_cached.so -ldl || exit 1
readelf -r /tmp/gnu2/libmgpu_cached.so | grep -c TLSDESC > $O/tlsdesc_relocs.txt
chain_split_build || exit 1
chain_pair_build || exit 1
E="MGPU_CACHED_GRAPH=1 MGPU_CACHED_CHAIN=1 MGPU_CACHED_STREAM_HANDLES=tagged"
for p in $(seq 16); do
  for t in gnu2 plain start; do
    lib=/tmp/$t/libmgpu_cached.so; [ $t = start ] && lib=$S
    echo "$t $(env $E LD_PRELOAD=$lib timeout 60 /tmp/cpp /tmp/empty.fatbin 10 200 40)"
  done
done > $O/chain_pair.raw
python3 benchmarks/chain_pair_table.py $O/chain_pair.raw > $O/chain_pair.md 2>&1
head -6 $O/chain_pair.md
