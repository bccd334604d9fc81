#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N99 (one H100, nvidia-h100-x1): issue 19's last "done when" row on the final C code (5b0f7ca):
# every row of the README's measured table (empty, stencil, large module, the async step, the step
# with buffers made once; LLVM 19 and 22) side by side with the tree before issue 19 (391bd88's
# csrc, preloaded), 12 rounds, per-round ratios from benchmarks/paired.py. PART=A: the
# synchronous rows; PART=B: the async rows (one call each, same machine); PART=C: the step with
# buffers made once alone, 24 rounds (its LLVM 22 row in part B: 1.026x per round, [1.021, 1.072]).
# Carry `.gpu` (base-src: 391bd88's csrc), `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
r=12; case ${PART:-A} in A) n=sync_n99 p=empty,stencil,large;; B) n=async_n99 p=async,async_prealloc;;
  *) n=prealloc_n99 p=async_prealloc r=24;; esac
ROUNDS=$r side_by_side $n 560 $p --config before-391bd88:LD_PRELOAD=$B
python3 benchmarks/paired.py $O/$n.json cached before-391bd88 > $O/${n}_paired.txt 2>&1
cat $O/${n}_paired.txt
