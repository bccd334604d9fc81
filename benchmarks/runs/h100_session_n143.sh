#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N143 (one H100, nvidia-h100-x1): why the library's heap-blob hit costs more in a chain than
# the same comparison made by the program (run N142: heap 1.163x the graph at K = 10, exe+same
# 1.120x, exe 1.095x). Experimental builds of this tree, each preloaded into chain_pair_probe.c
# (K = 10, 7 processes each, interleaved):
#   now      this tree;
#   whole    mc_blob_same compares the whole length in one call (no page loop);
#   aligned  module records allocated on whole 64-byte lines of their own;
#   nocmp    the heap hit not compared at all (unsafe; the floor of the heap shape's other work).
# Carry `.gpu`, `.whl`.
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
for v in now whole aligned nocmp; do variant $v || exit 1; done
E="MGPU_CACHED_GRAPH=1 MGPU_CACHED_CHAIN=1 MGPU_CACHED_STREAM_HANDLES=tagged"
for p in $(seq 7); do
  for v in now whole aligned nocmp; do
    echo "$v $(env $E LD_PRELOAD=/tmp/$v/libmgpu_cached.so timeout 60 /tmp/cpp /tmp/empty.fatbin 10 200 40)"
  done
done > $O/chain_pair.raw
python3 benchmarks/chain_pair_table.py $O/chain_pair.raw > $O/chain_pair.md 2>&1
cat $O/chain_pair.md
