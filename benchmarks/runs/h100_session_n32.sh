#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N32 (one H100, nvidia-h100-x1): run N31's noisy machine put the allocating async step at
# 1.18x / 1.14x the tree before issue 19. Side by side, 10 rounds: the library, the tree one commit
# earlier (run N29's rules, before nested brackets: carried as .gpu/bisect/n29), the library with
# blocking waits in its reclaimer (attribution_variants.py "blocking"), the tree before issue 19
# and this session's starting tree. Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
. benchmarks/runs/async_step.sh
cfg=$(bisect_configs) || exit 1
attribution_build blocking || exit 1
# shellcheck disable=SC2086  # cfg is a word list
ROUNDS=10 side_by_side async_ab 500 async,async_prealloc $cfg --config c-blocking:LD_PRELOAD=/tmp/av/blocking.so \
  --config before-391bd88:LD_PRELOAD=$B --config start-1de36e5:LD_PRELOAD=$S
