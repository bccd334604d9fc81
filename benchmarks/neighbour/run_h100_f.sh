#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Issue 19's 3% rule on the H100, run F: the MLIR programs of the rule (empty, stencil, large
# module, async step; LLVM 19 and 22) with three library trees side by side in one interleaved
# run (benchmarks/run.py; every tree preloaded into the same binary, so they differ in nothing else):
#   now           this tree (the pip-installed library)
#   before-391bd88  the tree before issue 19: its csrc/ carried in .gpu/base-src (flat csrc/*.c)
#   main-c3b5041    optional, the tree before the 3% work: its csrc/ in .gpu/main-src (layered)
# plus the driver floor and the linked `cached` binary. Stock is skipped (--skip): more rounds.
# About 3 minutes. Carry `.whl` (cffi, pycparser wheels) and `.gpu`; prepare .gpu with
#   mkdir -p .gpu/base-src .gpu/main-src
#   git archive 391bd88 csrc | tar -x -C .gpu/base-src
#   git archive c3b5041 csrc | tar -x -C .gpu/main-src
# Writes $OUT/results.md, results.json, summary.txt (now against each tree), device.txt, build.log.
set -u
O=${OUT:-/tmp/out}
mkdir -p "$O"
R=$(pwd)
{
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  python3 -m pip install -q --no-deps --no-build-isolation .
} > "$O/build.log" 2>&1 || { tail -20 "$O/build.log"; exit 1; }
export PYTHONPATH=/tmp/site
NOW=$(cd /tmp && python3 -c 'import mgpu_cached; print(mgpu_cached.library_path())')
CF="-O2 -std=c11 -D_GNU_SOURCE -fPIC -fvisibility=hidden -shared -pthread -Wl,-z,nodelete"
mkdir -p /tmp/trees
CONFIGS="--config now:LD_PRELOAD=$NOW"
cc $CF -I.gpu/base-src/csrc .gpu/base-src/csrc/*.c -o /tmp/trees/before.so -ldl >> "$O/build.log" 2>&1 \
  || { echo "no .gpu/base-src: the before tree is needed"; tail -5 "$O/build.log"; exit 1; }
CONFIGS="$CONFIGS --config before-391bd88:LD_PRELOAD=/tmp/trees/before.so"
if [ -d .gpu/main-src/csrc ] && cc $CF -I.gpu/main-src/csrc .gpu/main-src/csrc/*/*.c \
     -o /tmp/trees/main.so -ldl >> "$O/build.log" 2>&1; then
  CONFIGS="$CONFIGS --config main-c3b5041:LD_PRELOAD=/tmp/trees/main.so"
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$O/device.txt"
timeout 230 python3 benchmarks/run.py --out /tmp/suite --programs empty,stencil,large,async \
  --llvm 19,22 --rounds 8 --reps 3 --scale 0.3 --skip stock,stock-named,preload $CONFIGS \
  > /tmp/suite.log 2>&1
echo "suite rc=$?" >> /tmp/suite.log
cp /tmp/suite/results.md /tmp/suite/results.json "$O/" 2>/dev/null
tail -3 /tmp/suite.log > "$O/suite_tail.txt"
python3 - "$O/results.json" > "$O/summary.txt" <<'EOF'
# now against each other tree: medians of all samples, and the median of the per-round medians
import json, statistics, sys
d = json.load(open(sys.argv[1]))
cells = {(c["program"], c["llvm"], c["runtime"]): c for c in d["cells"]}
trees = [t for t in ("before-391bd88", "main-c3b5041") if any(k[2] == t for k in cells)]
print("µs per iteration (median of all samples); ratio = now / tree (<= 1.03: within the 3% rule)")
for (p, v, rt), c in sorted(cells.items()):
    if rt != "now" or not c["samples_us"]:
        continue
    now = statistics.median(c["samples_us"])
    parts = [f"{p:8s} LLVM {v}: now {now:7.2f}"]
    for t in trees:
        o = cells.get((p, v, t))
        if o and o["samples_us"]:
            m = statistics.median(o["samples_us"])
            parts.append(f"{t} {m:7.2f} ({now / m:.3f}x)")
    print("  ".join(parts))
EOF
cat "$O/summary.txt"; cat "$O/suite_tail.txt"
