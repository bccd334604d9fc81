#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N145 (one H100, nvidia-h100-x1): run N144 found the heap shape's links 2..K costing what the
# exe shape's cost but for the comparison (nocmp: +1-2 ns a call), while its chains still cost
# 0.2-0.5 µs more: chain_pair_probe.c now times the first link's calls and the synchronisation
# apart too. This tree (the comparison's tail as masked loads with no branch) and run N143's nocmp
# build (benchmarks/runs/n143_patch.py), K = 10, 6 processes each, interleaved. Carry `.gpu`,
# `.whl`.
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
