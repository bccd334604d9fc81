#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# One short device call at the end of the session (run I on the H100): the sticky-error class of
# the differential tester (100 programs; it did not get to run in run H), the allocating async step
# against the tree before issue 19 after the headroom check became margin-based, and
# `mgpu-cached bench` with its new rows. Carry `.gpu` and `.whl`. About 4 minutes.
set -u
. benchmarks/neighbour/setup_h100.sh
timeout 110 python3 tests/difftest/difftest.py --profile ordered --classes sticky --programs 100 \
  --seed 19 --timeout 20 --minimise 1 --minimise-budget 20 --out /tmp/dts > $O/difftest_sticky.txt 2>&1
echo "rc=$?" >> $O/difftest_sticky.txt
timeout 100 python3 benchmarks/run.py --out /tmp/suite --programs async,async_prealloc --llvm 19,22 \
  --rounds 4 --reps 3 --scale 0.3 --skip stock-named,preload \
  --config before-391bd88:LD_PRELOAD=$R/.gpu/base/libmgpu_cached.so > /tmp/suite.log 2>&1
echo "suite rc=$?" >> /tmp/suite.log
cp /tmp/suite/results.json $O/suite_async.json 2>/dev/null; tail -2 /tmp/suite.log > $O/suite_async_tail.txt
(cd /tmp && timeout 90 python3 -m mgpu_cached bench > $O/bench.txt 2> $O/bench.log); echo "rc=$?" >> $O/bench.txt
head -c 400 $O/difftest_sticky.txt; echo; cat $O/suite_async_tail.txt; cat $O/bench.txt
