# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# neighbour_checks.sh - sourced, after benchmarks/neighbour/setup_h100.sh (which sets O, builds
# /tmp/libmc.so and puts the cffi wheel on PYTHONPATH), by the run scripts that check issue 19's
# promises on the GPU (runs L8b, M1, M5): the steps they share.
#   review2_and_torch       review 2's gpu_exp.c (G1-G12, stock and cached side by side) into
#                           $O/gpu_exp.txt; PyTorch in the same process into $O/torch_neighbour.txt
#   difftest NAME LIMIT_S TESTER_ARGS...   tests/difftest/difftest.py (--timeout 20, minimised once
#                           with a budget of 10) into $O/difftest_NAME.txt
#   neighbour_summary       the tester's verdicts, G1-G12 and the PyTorch lines
#   final_code_checks       (tree_checks.sh sourced too) every GPU test with the graph path on and
#                           off, review2_and_torch, each printed (runs N92, N94, N97)
#   difftest_two_classes SEED   the tester's threads and capture, and module globals and memory
#                           pressure classes, 1,000 programs each (seeds SEED, SEED + 1), printed
#                           (runs N94, N97)

review2_and_torch() {
  cc -O1 -std=c11 -D_GNU_SOURCE -o /tmp/gx .gpu/review2/gpu_exp.c -ldl -pthread || return 1
  GX_STOCK_DISABLE=1 timeout 100 /tmp/gx /tmp/libmc.so /tmp/libmc.so > $O/gpu_exp.txt 2>&1
  timeout 60 python3 benchmarks/neighbour/torch_neighbour.py --lib /tmp/libmc.so > $O/torch_neighbour.txt 2>&1
  echo "rc=$?" >> $O/torch_neighbour.txt
}

difftest() {
  name=$1 limit=$2
  shift 2
  timeout "$limit" python3 tests/difftest/difftest.py --timeout 20 --minimise 1 --minimise-budget 10 \
    --out /tmp/dt-$name "$@" > $O/difftest_$name.txt 2>&1
}

neighbour_summary() {
  grep -h '"differences"' $O/difftest_*.txt | cut -c1-160; grep -E "^G[0-9]+" $O/gpu_exp.txt | cut -c1-300
  grep -E "PASS|FAIL|SUMMARY" $O/torch_neighbour.txt | tail -8
}

final_code_checks() {
  gpu_tests_on_off 150
  cat $O/pytest-gpu.log
  review2_and_torch
  grep -E "^G[0-9]+" $O/gpu_exp.txt | cut -c1-100; grep -E "SUMMARY" $O/torch_neighbour.txt
}

difftest_two_classes() {
  difftest threads_capture 120 --profile stock --classes threads,capture --programs 1000 --seed "$1"
  difftest modglobal_pressure 100 --profile stock --classes modglobal,pressure --programs 1000 \
    --seed $(($1 + 1))
  grep -h '"differences"' $O/difftest_*.txt | cut -c1-200
}
