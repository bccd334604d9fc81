#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N20 (one H100, nvidia-h100-x1): run N19's LLVM 19 first call of the installed library varied
# between rounds (1848-2791 us) where the starting tree, linked from /tmp, did not (1897-2018). The
# first call twice: "before" = the starting tree (/tmp/sb), then "before" = a copy of this tree's
# library (/tmp/sc), both linked from /tmp; then the thread throughput with 9 reps. Carry `.gpu`,
# `.whl`. Logs under $OUT.
set -u
. benchmarks/neighbour/setup_h100.sh
mkdir -p /tmp/sb /tmp/sc && cp $R/.gpu/start/libmgpu_cached.so /tmp/sb/ && cp "$(mgpu-cached --libdir)/libmgpu_cached.so" /tmp/sc/
for b in sb sc; do
  timeout 120 python3 benchmarks/first_call.py --out /tmp/fc_$b --rounds 10 --n 200 --reps 3 --before /tmp/$b > $O/first_call_$b.log 2>&1
  cat /tmp/fc_$b/first_call.md > $O/first_call_$b.md 2>/dev/null; echo "== before=$b"; sed -n 5,12p $O/first_call_$b.md
done
timeout 200 python3 benchmarks/conc/throughput.py --launches 20000 --reps 9 --diagnose \
  --only "cached,stock,driver ctx push/pop" > $O/throughput.txt 2>&1; echo "rc=$?" >> $O/throughput.txt; cat $O/throughput.txt
