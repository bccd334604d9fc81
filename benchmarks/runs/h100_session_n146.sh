#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N146 (one H100, nvidia-h100-x1): run N145 found the heap shape's synchronisation 0.37-0.39 µs
# dearer than the exe shape's, with its hits compared or not (nocmp). chain_pair_probe.c now also
# times the synchronisation of the LLVM 22 shape's kernel (the heap blob's module) and of the exe
# blob's kernel launched alone, and of the exe shape once a load holds its module (as the setup's
# load holds the heap blob's). This tree and nocmp, K = 10, 6 processes each. Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
chain_split_build || exit 1
chain_pair_build || exit 1
variant() {  # variant NAME: csrc copied to /tmp/NAME-src, patched by benchmarks/runs/n143_patch.py
  rm -rf /tmp/$1-src && cp -r csrc /tmp/$1-src && python3 benchmarks/runs/n143_patch.py /tmp/$1-src $1 &&
  mkdir -p /tmp/$1 && cc $CP -I/tmp/$1-src $(find /tmp/$1-src -mindepth 2 -name "*.c" | sort) \
    -o /tmp/$1/libmgpu_cached.so -ldl
}
for v in now nocmp; do variant $v || exit 1; done
E="MGPU_CACHED_GRAPH=1 MGPU_CACHED_CHAIN=1 MGPU_CACHED_STREAM_HANDLES=tagged"
for p in $(seq 6); do
  for v in now nocmp; do
    echo "$v $(env $E LD_PRELOAD=/tmp/$v/libmgpu_cached.so timeout 60 /tmp/cpp /tmp/empty.fatbin 10 200 30)"
  done
done > $O/chain_pair.raw
python3 benchmarks/chain_pair_table.py $O/chain_pair.raw > $O/chain_pair.md 2>&1
cat $O/chain_pair.md
