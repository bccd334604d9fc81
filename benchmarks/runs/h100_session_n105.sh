#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N105 (one H100, nvidia-h100-x1): this session's final C code (a cached host_shared block
# freed untouched goes back to the driver). PART=A: every GPU test with the graph path on and off,
# review 2's gpu_exp.c (G1-G12) and PyTorch in the same process. PART=B: the differential tester's
# threads/capture and module-globals/pressure classes (1,000 programs each, stock profile), and
# the README's rows (8 rounds) beside the tree before issue 19 (391bd88) and the tree before
# issue 21 (2b44c70, flat csrc). Carry `.gpu` (base-src, b21-src), `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
. benchmarks/runs/neighbour_checks.sh
if [ "${PART:-A}" = A ]; then
  final_code_checks
else
  mkdir -p .gpu/b21 && cc $CP -I.gpu/b21-src/csrc -I.gpu/b21-src/csrc/include $(ls .gpu/b21-src/csrc/*.c | sort) \
    -o .gpu/b21/libmgpu_cached.so -ldl || exit 1
  difftest_two_classes 1051
  ROUNDS=8 side_by_side rows_n105 420 empty,stencil,large,async,async_prealloc \
    --config before-391bd88:LD_PRELOAD=$B --config before21-2b44c70:LD_PRELOAD=$R/.gpu/b21/libmgpu_cached.so
  python3 benchmarks/paired.py $O/rows_n105.json cached before-391bd88 cached before21-2b44c70 \
    > $O/rows_n105_paired.txt 2>&1; cat $O/rows_n105_paired.txt
fi
