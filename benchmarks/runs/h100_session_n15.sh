#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N15 (one H100, nvidia-h100-x1): does a build that lets the compiler see across files close the
# ~1.3% per synchronous launch left between the final tree and b1bf448 (runs N6-N13)? Variants built
# alike and preloaded (.gpu/bisect/*, carried): b1bf448; this tree as the package builds it (cur);
# as csrc/'s flat view builds it, all.c as one unit plus pool.c (curunity); and with -flto
# (curlto). The synchronous rows, 8 rounds. Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
CFG="$(bisect_configs)"
side_by_side variants_ab 480 empty,stencil,large $CFG
