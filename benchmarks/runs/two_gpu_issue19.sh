#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# two_gpu_issue19.sh tests|twodev - issue 19's two-device checks, one device call each on two GPUs
# (nvidia-h100-x2 or nvidia-h200-x2; not yet run: the kinds were not lent while device time was
# left). Carry `.whl`. Logs under $OUT.
#   tests   every GPU test (the two-GPU ones run here) and tests/data/conc/stay_on_device.c, each
#           with the graph path on and off (as h200x2_gpu_tests.sh, on this tree)
#   twodev  the differential tester's two-device class: module globals, memory pressure, another
#           library's capture and threads mixed on two devices, 2000 programs (gpu_validate.sh)
set -u
MODE=${1:?usage: two_gpu_issue19.sh tests|twodev}
. benchmarks/neighbour/setup_h100.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv > $O/device.txt 2>&1
if [ "$MODE" = tests ]; then
  OUT=$O sh benchmarks/runs/h200x2_gpu_tests.sh
  exit $?
fi
timeout 560 bash tests/difftest/gpu_validate.sh /tmp/dt2 twodev > /dev/null 2>&1
cp /tmp/dt2/run.log $O/difftest_twodev.txt 2>/dev/null
grep -E '"differences"|== |wall' $O/difftest_twodev.txt | cut -c1-200
