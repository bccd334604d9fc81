#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N81 (one H100, nvidia-h100-x1): where the allocating async step's host time goes, entry point
# by entry point (benchmarks/abi_time.py: the step timed under benchmarks/harness/abi_time.c, 2000
# and 4000 steps, 5 rounds), with the library as committed, the tree before issue 19
# (before-391bd88), and attribution copies (benchmarks/neighbour/attribution_variants.py, carried
# in .gpu/bisect: noverify, all3 = no context check + no relaxed bracket + no capture query,
# noquery) and switches (reused blocks not cleared; no headroom checks). Issue 19's 3% rule.
# Carry `.gpu`, `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh
. benchmarks/runs/tree_checks.sh
CFG=$(bisect_configs) || exit 1
timeout 520 python3 benchmarks/abi_time.py --out /tmp/at --programs async,async_prealloc --llvm 19,22 \
  --n 2000 --rounds 5 --config before-391bd88:LD_PRELOAD=$B $CFG \
  --config nozero:MGPU_CACHED_ALLOCATOR_ZERO=0 --config noheadroom:MGPU_CACHED_ALLOCATOR_HEADROOM=0 \
  > $O/abi_time.log 2>&1
echo "rc=$?" >> $O/abi_time.log
cp /tmp/at/abi_time.md /tmp/at/abi_time.json $O/ 2>/dev/null
grep -B2 -A14 "async, LLVM" $O/abi_time.md | cut -c1-200; tail -3 $O/abi_time.log
