#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N2 (one H100, nvidia-h100-x1): where the LLVM 22 first call's extra time goes, call by call
# (benchmarks/first_call_stages: µs, page faults, µs inside the driver per mgpu call, cached
# against stock behaviour); what the driver's own small alloc + free pair costs and on what it
# depends (benchmarks/alloc_driver_probe.c); thread throughput with longer runs and ratios taken
# within each rep. Carry `.gpu`, `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
timeout 120 sh benchmarks/first_call_stages/run.sh 15 > $O/first_call_stages.txt 2>&1
echo "rc=$?" >> $O/first_call_stages.txt; cat $O/first_call_stages.txt
cc -O2 -Ibenchmarks -o /tmp/adp benchmarks/alloc_driver_probe.c -ldl
timeout 120 /tmp/adp 7 > $O/alloc_driver_probe.txt 2>&1; echo "rc=$?" >> $O/alloc_driver_probe.txt
cat $O/alloc_driver_probe.txt
timeout 300 python3 benchmarks/conc/throughput.py --launches 20000 --reps 7 --diagnose \
  --only "cached,stock,cached llvm19-load,driver ctx push/pop,cached ctx current" > $O/throughput.txt 2>&1
echo "rc=$?" >> $O/throughput.txt; cat $O/throughput.txt
