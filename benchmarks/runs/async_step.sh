# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# async_step.sh - sourced, after benchmarks/neighbour/setup_h100.sh (which sets O and R), by the run
# scripts that compare the allocating async step (runs L1-L10): the steps they share.
#   async_suite ROUNDS [--config NAME:VAR=VAL[,...]]...  the async and async_prealloc rows, LLVM 19
#       and 22 (run.py, stock / stock-named / preload skipped), into $O/suite_async.md / .json
#   async_bins              /tmp/async19, /tmp/async22: benchmarks/harness/harness.c on the installed
#                           library
#   async_trace V NAME [VAR=VAL]...   600 traced steps with those variables: /tmp/NAME$V.json
#   async_spans V "OPTIONS" NAME...   benchmarks/trace/call_spans.py OPTIONS over those traces
#   driver_call_costs       benchmarks/harness/driver_calls.c into $O/driver_calls.txt
#   attribution_build VARIANT...      attribution_variants.py's copies built as /tmp/av/VARIANT.so
#   stats_show PREFIX...    the counters starting with one of the PREFIXes in each $O/stats_*.txt
#   async_three_trees "OPTIONS"       (START_LABEL: the starting tree's label) 600 traced steps with the library (its counters in
#                           $O/stats_cachedV.txt), the tree before issue 19 and the session's start,
#                           LLVM 19 and 22: call_spans.py OPTIONS into $O/call_spans.md
#   async_execs_stats       the counters of one untraced run per MGPU_CACHED_GRAPH_EXECS 8 / 16 / 32
B=$R/.gpu/base/libmgpu_cached.so   # the tree before issue 19 (setup_h100.sh builds it)
S=$R/.gpu/start/libmgpu_cached.so  # the session's starting tree, when carried
SPLIT=mgpuLaunchKernel,mgpuStreamCreate,mgpuStreamDestroy,mgpuMemAlloc,mgpuMemFree,mgpuStreamSynchronize

async_suite() {
  rounds=$1
  shift
  timeout 330 python3 benchmarks/run.py --out /tmp/suite --programs async,async_prealloc \
    --llvm 19,22 --rounds "$rounds" --reps 3 --scale 0.3 --skip stock,stock-named,preload "$@" \
    > /tmp/suite.log 2>&1
  echo "suite rc=$?" >> /tmp/suite.log
  { grep -E "^\| " /tmp/suite/results.md | head -6; tail -2 /tmp/suite.log; } > $O/suite_async.md 2>&1
  cp /tmp/suite/results.json $O/suite_async.json 2>/dev/null
  cut -c1-400 $O/suite_async.md
}

async_bins() {
  lib=$(python3 -m mgpu_cached --libdir)
  for v in 19 22; do
    cc -std=c11 -D_GNU_SOURCE -O2 -DPROG_ASYNC -Ibenchmarks/harness -o /tmp/async$v \
      benchmarks/harness/harness.c tests/data/mlir/async_step_llvm$v.o -L"$lib" -lmgpu_cached \
      -Wl,-rpath,"$lib" -lm || return 1
  done
}

async_trace() {
  v=$1 name=$2
  shift 2
  env "$@" MGPU_CACHED_TRACE=/tmp/$name$v.json /tmp/async$v 600 1 10 > /dev/null
}

async_spans() {
  v=$1 opts=$2
  shift 2
  args=""
  for name in "$@"; do args="$args $name=/tmp/$name$v.json"; done
  # shellcheck disable=SC2086  # options and arguments are word lists
  python3 benchmarks/trace/call_spans.py --skip 50 $opts $args
}

driver_call_costs() {
  stubs="-L/usr/local/cuda/lib64/stubs -lcuda"
  [ -e /usr/local/cuda/lib64/stubs/libcuda.so ] || stubs="-l:libcuda.so.1"
  python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from run import extract_blob; \
open('/tmp/empty.fatbin', 'wb').write(extract_blob(open('tests/data/mlir/empty_loop_llvm22.o', 'rb').read()))"
  # shellcheck disable=SC2086
  cc -O2 -std=c11 -D_GNU_SOURCE -I/usr/local/cuda/include -Ibenchmarks/harness \
    benchmarks/harness/driver_calls.c -o /tmp/driver_calls $stubs -lm &&
    /tmp/driver_calls /tmp/empty.fatbin 20000 > $O/driver_calls.txt 2>&1
  cat $O/driver_calls.txt
}

attribution_build() {
  python3 benchmarks/neighbour/attribution_variants.py csrc /tmp/av || return 1
  for v in "$@"; do
    # shellcheck disable=SC2046
    cc -O2 -std=c11 -D_GNU_SOURCE -fPIC -fvisibility=hidden -shared -pthread -Wl,-z,nodelete \
      -I/tmp/av/$v/csrc $(find /tmp/av/$v/csrc -mindepth 2 -name "*.c") -o /tmp/av/$v.so -ldl || return 1
  done
}

stats_show() {
  for f in $O/stats_*.txt; do
    echo "== $f"
    python3 -c "import json, sys; d = json.load(open(sys.argv[1]))['stats']; \
print({k: v for k, v in d.items() if k.startswith(tuple(sys.argv[2:]))})" "$f" "$@"
  done
}

async_three_trees() {
  start=${START_LABEL:-start-16750f0}
  for v3 in 19 22; do
    async_trace $v3 cached MGPU_CACHED_STATS_FILE=$O/stats_cached$v3.txt
    async_trace $v3 before-391bd88 LD_PRELOAD=$B
    async_trace $v3 $start LD_PRELOAD=$S
    echo "== LLVM $v3: traced 600 steps (host spans)"
    async_spans $v3 "$1" cached before-391bd88 $start
  done > $O/call_spans.md 2>&1
  grep -E "Launch|step|inside|Sync|==|Free|allocation" $O/call_spans.md
}

async_execs_stats() {
  for v3 in 19 22; do
    for x in 8 16 32; do
      MGPU_CACHED_GRAPH_EXECS=$x MGPU_CACHED_STATS_FILE=$O/stats_execs${x}_$v3.txt /tmp/async$v3 600 1 10 \
        > /dev/null
    done
  done
}
