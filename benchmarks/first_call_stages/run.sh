#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# first_call_stages/run.sh N: builds stages.c against the installed libmgpu_cached.so (or, with
# LIBDIR=DIR in the environment, DIR's) and timecuda.so, runs N processes per runtime (cached, stock behaviour), and
# prints the median µs / page faults / driver µs per stage and call, with and without timecuda
# (the shim's own cost is a few hundred ns per call). Needs a GPU, or MGPU_CACHED_CUDA_DRIVER /
# COUNTCUDA_REAL pointing at a fake driver (then timecuda forwards to COUNTCUDA_REAL).
set -eu
N=${1:-10}
H=$(cd "$(dirname "$0")" && pwd)
R=$(cd "$H/../.." && pwd)
T=$(mktemp -d)
cc -std=c11 -D_GNU_SOURCE -O2 -fPIC -shared -pthread -I"$R/csrc/platform" -I"$R/tests/drivers" \
  -o "$T/timecuda.so" "$H/timecuda.c" -ldl
LIB=${LIBDIR:-$(python3 -c "import mgpu_cached; print(mgpu_cached.libdir())")}
W="-Wl,--wrap=mgpuModuleLoad,--wrap=mgpuModuleGetFunction,--wrap=mgpuStreamCreate"
W="$W,--wrap=mgpuLaunchKernel,--wrap=mgpuStreamSynchronize,--wrap=mgpuStreamDestroy"
cc -std=c11 -O2 -o "$T/stages" "$H/stages.c" "$R/tests/data/mlir/large_module_llvm22.o" $W \
  -L"$LIB" -Wl,-rpath,"$LIB" -lmgpu_cached -ldl
REAL=${COUNTCUDA_REAL:-${MGPU_CACHED_CUDA_DRIVER:-libcuda.so.1}}
for i in $(seq "$N"); do
  for mode in cached stock; do
    for shim in none timecuda; do
      dis=0; [ $mode = stock ] && dis=1
      if [ $shim = timecuda ]; then
        MGPU_CACHED_DISABLE=$dis COUNTCUDA_REAL=$REAL MGPU_CACHED_CUDA_DRIVER="$T/timecuda.so" \
          "$T/stages" > "$T/out" 2> "$T/err" || { cat "$T/err"; exit 1; }
        sed "s/^/$mode $shim /" "$T/err" >> "$T/tables"
      else
        MGPU_CACHED_DISABLE=$dis "$T/stages" > "$T/out" 2> "$T/err" || { cat "$T/err"; exit 1; }
      fi
      sed "s/^STAGE /$mode $shim /" "$T/out" >> "$T/all"
    done
  done
done
python3 - "$T/all" "$N" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    mode, shim, stage, call, us, flt, drv = line.split()
    rows.setdefault((shim, stage, call, mode), []).append((float(us), int(flt), float(drv)))
print(f"first call of the LLVM 22 301-kernel module, call by call, median of {sys.argv[2]} processes")
print(f"{'shim':9} {'stage':7} {'call':9} {'cached us':>10} {'stock us':>9} {'c-s':>7} "
      f"{'c faults':>9} {'s faults':>9} {'c lib us':>9} {'s lib us':>9}")
for shim in ("none", "timecuda"):
    for stage in ("ctor", "first", "second"):
        for call in ("load", "getfn", "screate", "launch", "ssync", "sdestroy"):
            c, s = rows.get((shim, stage, call, "cached")), rows.get((shim, stage, call, "stock"))
            if not c and not s:
                continue
            med = lambda v, k: statistics.median(x[k] for x in v) if v else 0.0
            lib = lambda v: statistics.median(x[0] - x[2] for x in v) if v else 0.0
            print(f"{shim:9} {stage:7} {call:9} {med(c,0):10.1f} {med(s,0):9.1f} "
                  f"{med(c,0)-med(s,0):7.1f} {med(c,1):9.0f} {med(s,1):9.0f} "
                  + (f"{lib(c):9.1f} {lib(s):9.1f}" if shim == "timecuda" else ""))
PY
echo "last process's driver calls (timecuda):"
tail -8 "$T/tables"
rm -rf "$T"
