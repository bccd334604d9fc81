#!/bin/bash
# gpu_validate.sh OUT - the differential tester on a GPU machine (validation run, a few hundred
# programs per class): the ordered profile, the stock-deterministic races (cross_free,
# cross_alloc), fresh_zero, the whole stock profile with MGPU_CACHED_ALLOCATOR=0, and the zero probe.
# Run from the checkout's root after `pip install .`. Writes OUT/run.log, OUT/device.txt and
# OUT/<class>-differences.txt. (When it ran, the profile `stock` still included fresh_zero.)
set -u
OUT=$1
T=$(mktemp -d)
export PYTHONUNBUFFERED=1
log=$OUT/run.log
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/device.txt" 2>&1
one() {
  local name=$1; shift
  echo "== $name: python3 tests/difftest/difftest.py $* --out DIR" >> "$log"
  local s=$(date +%s.%N)
  timeout 110 python3 tests/difftest/difftest.py --timeout 20 --out "$T/$name" "$@" > "$T/$name.log" 2>&1
  echo "   exit $? wall $(python3 -c "print(round($(date +%s.%N)-$s,2))") s" >> "$log"
  head -c 12000 "$T/$name.log" >> "$log"
  cp "$T/$name/differences.txt" "$OUT/$name-differences.txt" 2>/dev/null
}
one ordered --profile ordered --programs 1000 --seed 1 --minimise 2 --minimise-budget 40
one races --allow cross_free,cross_alloc --programs 500 --seed 1 --minimise 1 --minimise-budget 40
one fresh --allow fresh_zero --programs 300 --seed 1 --minimise 0
MGPU_CACHED_ALLOCATOR=0 one noalloc --profile stock --programs 500 --seed 1 --minimise 1 --minimise-budget 30
echo "== probe_zero (written, freed, allocated again: 1 = reads as zeros)" >> "$log"
timeout 60 python3 tests/difftest/probe_zero.py >> "$log" 2>&1
rm -rf "$T"
