#!/bin/bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# gpu_validate.sh OUT [neighbour|faults|twodev|tight] - the differential tester on a GPU machine.
#
# Without a second argument (validation run, a few hundred programs per class): the ordered
# profile, the stock-deterministic races (cross_free, cross_alloc), fresh_zero, the whole stock
# profile with MGPU_CACHED_ALLOCATOR=0, and the zero probe. (When it ran, the profile `stock`
# still included fresh_zero.)
#
# Issue 19 item 8, the classes of generator.py (ordered profile), each mode under 10 minutes:
#  neighbour  one GPU: modglobal, pressure, capture, threads 2500 programs each (10,000), and
#             the four mixed, 2000 programs
#  faults     one GPU: reset and sticky, 150 programs each (one runner process per such program:
#             the stock library cannot go on after a sticky error, nor the cached run after a reset)
#  twodev     two GPUs: the four classes mixed on two devices, 2000 programs
#  tight      one GPU: the pressure class with DIFFTEST_MARGIN_MB=16 (the device below the
#             allocator's headroom, as the fake's CPU class), stock and ordered profiles, 1000 each
# The runner's --caps must list every class used (else that class stops at once, exit 2).
#
# Run from the checkout's root after `pip install .`. Writes OUT/run.log, OUT/device.txt and
# OUT/<class>-differences.txt (and OUT/<class>-summary.json).
set -u
OUT=$1
MODE=${2:-validate}
mkdir -p "$OUT"
T=$(mktemp -d)
export PYTHONUNBUFFERED=1
log=$OUT/run.log
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/device.txt" 2>&1
one() {
  local name=$1 limit=$2; shift 2
  echo "== $name: python3 tests/difftest/difftest.py $* --out DIR" >> "$log"
  local s=$(date +%s.%N)
  timeout "$limit" python3 tests/difftest/difftest.py --timeout 20 --out "$T/$name" "$@" > "$T/$name.log" 2>&1
  echo "   exit $? wall $(python3 -c "print(round($(date +%s.%N)-$s,2))") s" >> "$log"
  head -c 12000 "$T/$name.log" >> "$log"
  cp "$T/$name/differences.txt" "$OUT/$name-differences.txt" 2>/dev/null
  cp "$T/$name/summary.json" "$OUT/$name-summary.json" 2>/dev/null
}
if [ "$MODE" = neighbour ]; then
  for c in modglobal pressure capture threads; do
    one "$c" 140 --profile ordered --classes "$c" --programs 2500 --seed 19 --minimise 2 --minimise-budget 20
  done
  one mixed 140 --profile ordered --classes modglobal,pressure,capture,threads --programs 2000 --seed 19 --minimise 2 --minimise-budget 20
  rm -rf "$T"
  exit 0
fi
if [ "$MODE" = tight ]; then  # the pressure class with 16 MiB beyond 8 units free (below the headroom)
  export DIFFTEST_MARGIN_MB=16
  one tight-stock 200 --profile stock --classes pressure --programs 1000 --seed 29 --minimise 1 --minimise-budget 20
  one tight-ordered 200 --profile ordered --classes pressure --programs 1000 --seed 31 --minimise 1 --minimise-budget 20
  rm -rf "$T"
  exit 0
fi
if [ "$MODE" = faults ]; then
  one reset 270 --profile ordered --classes reset --programs 150 --seed 19 --minimise 1 --minimise-budget 40
  one sticky 270 --profile ordered --classes sticky --programs 150 --seed 19 --minimise 1 --minimise-budget 40
  rm -rf "$T"
  exit 0
fi
if [ "$MODE" = twodev ]; then
  one mixed-2dev 500 --profile ordered --devices 2 --classes modglobal,pressure,capture,threads --programs 2000 --seed 19 --minimise 2 --minimise-budget 30
  rm -rf "$T"
  exit 0
fi
one ordered 110 --profile ordered --programs 1000 --seed 1 --minimise 2 --minimise-budget 40
one races 110 --allow cross_free,cross_alloc --programs 500 --seed 1 --minimise 1 --minimise-budget 40
one fresh 110 --allow fresh_zero --programs 300 --seed 1 --minimise 0
MGPU_CACHED_ALLOCATOR=0 one noalloc 110 --profile stock --programs 500 --seed 1 --minimise 1 --minimise-budget 30
echo "== probe_zero (written, freed, allocated again: 1 = reads as zeros)" >> "$log"
timeout 60 python3 tests/difftest/probe_zero.py >> "$log" 2>&1
rm -rf "$T"
