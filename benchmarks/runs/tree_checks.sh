# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# tree_checks.sh - sourced, after benchmarks/neighbour/setup_h100.sh (which sets O and R and builds
# the compared trees: .gpu/base, the tree before issue 19; .gpu/start, a session's starting tree),
# by the run scripts that check a final tree (runs H, K4a, L8a, M4): the steps they share.
#   gpu_tests_on_off LIMIT_S        every GPU test with the graph path on and off, into
#                                   $O/pytest-gpu.log
#   readme_suite LIMIT_S SCALE START_LABEL   the README's suite (benchmarks/run.py: empty, stencil,
#                                   large, async, async_prealloc; LLVM 19 and 22) beside stock, the
#                                   tree before issue 19 (before-391bd88) and the starting tree
#                                   (START_LABEL), both preloaded, into $O/suite.md and suite.json
#   bisect_configs                  builds each carried .gpu/bisect/<name>/csrc as the compared
#                                   trees are built (with -falign-functions=64 where the folder
#                                   holds a file ALIGN, -flto where LTO; csrc/'s flat view, all.c
#                                   and pool.c, where UNITY) and prints run.py's --config c-<name>
#                                   options that preload them (runs N6, N8, N9, N11-N13)
#   gpu_tests LIMIT_S               every GPU test once, into $O/pytest-gpu.log (runs N18, N19, N24)
#   first_call_checks N ROUNDS      the first call call by call (first_call_stages, N processes)
#                                   and beside the starting tree ($S; first_call.py, ROUNDS), into
#                                   $O/first_call_stages.txt, first_call.md (runs N11, N19)
#   side_by_side NAME LIMIT_S PROGRAMS CONFIG...   the synchronous rows (benchmarks/run.py, LLVM 19
#                                   and 22, $ROUNDS rounds (default 8), no stock columns) of PROGRAMS with the
#                                   CONFIG options, into $O/NAME.md and NAME.json (runs N6-N13)
#   alloc_loop_rounds ROUNDS LLVMS CONFIG...   MLIR's alloc_loop (benchmarks/alloc_loop_main.c,
#                                   2000 steps) for each LLVM version of LLVMS ("19 22") and
#                                   CONFIG (NAME:PRELOAD:VAR=VAL,VAR=VAL; PRELOAD and the variables
#                                   may be empty), rounds interleaved, into $O/alloc_loop_raw.txt and
#                                   the medians (benchmarks/medians.py) into $O/alloc_loop.md (runs
#                                   N84-N90, N92)
#   chain_split_build               benchmarks/chain_split_probe.c built into /tmp/csp with the
#                                   empty kernel's blob (/tmp/empty.fatbin) linked into its
#                                   .rodata (runs N111, N113-N115)
#   chain_split_rounds ROUNDS KS    after chain_split_build, chain replay on: for each of ROUNDS
#                                   rounds and each K of KS ("10 100"), the hand-made graph and the
#                                   three shapes (mgpu, mgpu19exe, mgpu19) with this library and
#                                   the starting tree preloaded, interleaved, into
#                                   $O/chain_split.raw and its tables $O/chain_split.md (runs
#                                   N115-N122, N126, N129, N130)
#   chain_pair_build                after chain_split_build, benchmarks/chain_pair_probe.c (every
#                                   shape and the hand-made graph in one process) built into
#                                   /tmp/cpp (run N138)
#   chain_pair_rounds PROCS         after chain_pair_build, chain replay on: PROCS processes of
#                                   /tmp/cpp for K = 10 (200 chains a block, 40 rounds) and K = 100
#                                   (60 chains a block, 24 rounds), this library and the starting
#                                   tree preloaded, interleaved, into $O/chain_pair.raw and its
#                                   table (benchmarks/chain_pair_table.py) $O/chain_pair.md (runs
#                                   N138, N139)
#   variant_pair_rounds PROCS ROUNDS VARIANTS   after chain_pair_build: each of VARIANTS ("now
#                                   nocmp"), this tree's csrc copied to /tmp/NAME-src, patched by
#                                   benchmarks/runs/n143_patch.py and built into /tmp/NAME/, then
#                                   PROCS processes of /tmp/cpp per variant (K = 10, 200 chains a
#                                   block, ROUNDS rounds) with it preloaded, interleaved, into
#                                   $O/chain_pair.raw and its table $O/chain_pair.md (runs
#                                   N143-N146)
#   chain_pair_same_rounds PROCS TREES   after chain_pair_build: benchmarks/harness/graph_stream_shim.c
#                                   built into /tmp/gss.so as the library's driver, then PROCS
#                                   processes of /tmp/cpp per tree of TREES ("now start": this
#                                   library, the starting tree preloaded), K = 10 (200 chains a
#                                   block, 40 rounds) and K = 100 (60, 24), each shape also set
#                                   against the graph on the driver stream its chains ran on, into
#                                   $O/chain_pair.raw and $O/chain_pair.md (run N153)
#   chains_now_start LLVMS          chain replay against the hand-made graph (benchmarks/chains.py,
#                                   K = 10 and 100, the LLVM shapes LLVMS, e.g. 22,19,19exe) with
#                                   this library and with the starting tree preloaded, into
#                                   $O/chains_now.md and chains_start.md (the loop of runs N55-N57)
B=$R/.gpu/base/libmgpu_cached.so
S=$R/.gpu/start/libmgpu_cached.so

gpu_tests_on_off() {
  { timeout "$1" python3 -m pytest -q -rf tests/gpu/ 2>&1 | tail -6; echo "== MGPU_CACHED_GRAPH=0"
    MGPU_CACHED_GRAPH=0 timeout "$1" python3 -m pytest -q -rf tests/gpu/ 2>&1 | tail -6; } > $O/pytest-gpu.log
}

readme_suite() {
  timeout "$1" python3 benchmarks/run.py --out /tmp/suite --programs empty,stencil,large,async,async_prealloc \
    --llvm 19,22 --rounds 3 --reps 3 --scale "$2" --skip stock-named,preload \
    --config before-391bd88:LD_PRELOAD=$B --config "$3":LD_PRELOAD=$S > /tmp/suite.log 2>&1
  echo "suite rc=$?" >> /tmp/suite.log
  { cat /tmp/suite/results.md; tail -2 /tmp/suite.log; } > $O/suite.md 2>&1
  cp /tmp/suite/results.json $O/suite.json 2>/dev/null
}

gpu_tests() {
  timeout "$1" python3 -m pytest -q -rf --tb=short tests/gpu/ > $O/pytest-gpu.log 2>&1
  tail -3 $O/pytest-gpu.log
}

first_call_checks() {
  timeout 100 sh benchmarks/first_call_stages/run.sh "$1" > $O/first_call_stages.txt 2>&1
  head -14 $O/first_call_stages.txt
  mkdir -p /tmp/sb && cp $S /tmp/sb/libmgpu_cached.so
  timeout 100 python3 benchmarks/first_call.py --out /tmp/fc --rounds "$2" --n 200 --reps 3 \
    --before /tmp/sb > $O/first_call.log 2>&1
  cat /tmp/fc/first_call.md > $O/first_call.md 2>/dev/null; cat $O/first_call.md
}

bisect_configs() {
  for d in .gpu/bisect/*; do
    n=$(basename $d); X=""; [ -f $d/ALIGN ] && X="-falign-functions=64"; [ -f $d/LTO ] && X="$X -flto"
    srcs=$(find $d/csrc -mindepth 2 -name "*.c" | sort); [ -f $d/UNITY ] && srcs=$(ls $d/csrc/*.c)
    cc $CP $X -I$d/csrc $srcs -o $d/libmgpu_cached.so -ldl || return 1
    printf ' --config c-%s:LD_PRELOAD=%s' "$n" "$R/$d/libmgpu_cached.so"
  done
}

side_by_side() {
  name=$1; limit=$2; progs=$3; shift 3
  timeout "$limit" python3 benchmarks/run.py --out /tmp/ab --programs "$progs" --llvm 19,22 \
    --rounds "${ROUNDS:-8}" --reps 3 --scale 0.3 --skip stock,stock-named,preload "$@" > /tmp/ab.log 2>&1
  echo "rc=$?" >> /tmp/ab.log; { sed -n 1,14p /tmp/ab/results.md; tail -2 /tmp/ab.log; } > $O/$name.md 2>&1
  cp /tmp/ab/results.json $O/$name.json 2>/dev/null; cut -c1-460 $O/$name.md
}
chains_now_start() {
  for t in now start; do
    pre=""; [ $t = start ] && pre=$S
    LD_PRELOAD=$pre timeout 170 python3 benchmarks/chains.py --out /tmp/ch_$t --k 10,100 --llvm "$1" \
      --rounds 3 --reps 3 --launches 3000 > $O/chains_$t.log 2>&1; echo "rc=$?" >> $O/chains_$t.log
    cp /tmp/ch_$t/chains.md $O/chains_$t.md; cp /tmp/ch_$t/chains.json $O/chains_$t.json 2>/dev/null
    cut -c1-200 $O/chains_$t.md | tail -6; tail -1 $O/chains_$t.log
  done
}

alloc_loop_rounds() {
  rounds=$1 llvms=$2
  shift 2
  for v in $llvms; do
    cc -std=c11 -O2 -o /tmp/al$v benchmarks/alloc_loop_main.c tests/data/mlir/alloc_loop_llvm$v.o \
      $(python3 -m mgpu_cached --ldflags) -ldl || return 1
  done
  for r in $(seq "$rounds"); do for v in $llvms; do for c in "$@"; do
    n=${c%%:*}; rest=${c#*:}; pre=${rest%%:*}; vars=$(echo "${rest#*:}" | tr ',' ' ')
    echo "$r $v $n $(env LD_PRELOAD=$pre $vars /tmp/al$v 2000 | cut -d' ' -f1)"
  done; done; done > $O/alloc_loop_raw.txt 2>&1
  python3 benchmarks/medians.py $O/alloc_loop_raw.txt > $O/alloc_loop.md
}
chain_split_build() {
  cuda=${CUDA_HOME:-/usr/local/cuda}
  python3 - <<'PY'
import sys; sys.path.insert(0, "benchmarks")
from pathlib import Path
from run import extract_blob
from chains import rodata_asm
Path("/tmp/empty.fatbin").write_bytes(extract_blob(Path("tests/data/mlir/empty_loop_llvm22.o").read_bytes()))
rodata_asm(Path("/tmp/empty.fatbin"), Path("/tmp/blob_exe.S"))
PY
  cul=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from run import cuda_link; print(' '.join(cuda_link('$cuda')))")
  cc -std=c11 -D_GNU_SOURCE -O2 -I$cuda/include -o /tmp/csp benchmarks/chain_split_probe.c /tmp/blob_exe.S \
    $(python3 -m mgpu_cached --ldflags) $cul -lm
}

# chain_pair_probe.c built into /tmp/cpp (after chain_split_build: its blob and .S)
chain_pair_build() {
  cuda=${CUDA_HOME:-/usr/local/cuda}
  cul=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from run import cuda_link; print(' '.join(cuda_link('$cuda')))")
  cc -std=c11 -D_GNU_SOURCE -O2 -I$cuda/include -Icsrc -o /tmp/cpp benchmarks/chain_pair_probe.c /tmp/blob_exe.S \
    $(python3 -m mgpu_cached --ldflags) $cul -lm
}

chain_pair_rounds() {
  E="MGPU_CACHED_GRAPH=1 MGPU_CACHED_CHAIN=1 MGPU_CACHED_STREAM_HANDLES=tagged"
  for p in $(seq "$1"); do
    echo "now $(env $E timeout 60 /tmp/cpp /tmp/empty.fatbin 10 200 40)"
    echo "start $(env $E LD_PRELOAD=$S timeout 60 /tmp/cpp /tmp/empty.fatbin 10 200 40)"
    echo "now $(env $E timeout 60 /tmp/cpp /tmp/empty.fatbin 100 60 24)"
    echo "start $(env $E LD_PRELOAD=$S timeout 60 /tmp/cpp /tmp/empty.fatbin 100 60 24)"
  done > $O/chain_pair.raw
  python3 benchmarks/chain_pair_table.py $O/chain_pair.raw > $O/chain_pair.md 2>&1
  cat $O/chain_pair.md
}

variant_pair_rounds() {
  for v in $3; do
    rm -rf /tmp/$v-src && cp -r csrc /tmp/$v-src && python3 benchmarks/runs/n143_patch.py /tmp/$v-src $v &&
      mkdir -p /tmp/$v && cc $CP -I/tmp/$v-src $(find /tmp/$v-src -mindepth 2 -name "*.c" | sort) \
        -o /tmp/$v/libmgpu_cached.so -ldl || return 1
  done
  E="MGPU_CACHED_GRAPH=1 MGPU_CACHED_CHAIN=1 MGPU_CACHED_STREAM_HANDLES=tagged"
  for p in $(seq "$1"); do
    for v in $3; do
      echo "$v $(env $E LD_PRELOAD=/tmp/$v/libmgpu_cached.so timeout 60 /tmp/cpp /tmp/empty.fatbin 10 200 "$2")"
    done
  done > $O/chain_pair.raw
  python3 benchmarks/chain_pair_table.py $O/chain_pair.raw > $O/chain_pair.md 2>&1
  cat $O/chain_pair.md
}

chain_split_rounds() {
  for r in $(seq "$1"); do
    for k in $2; do
      echo "$r now $(timeout 60 /tmp/csp /tmp/empty.fatbin cu_graphK $k 2000)"
      for m in mgpu mgpu19exe mgpu19; do
        echo "$r now $(MGPU_CACHED_GRAPH=1 MGPU_CACHED_CHAIN=1 MGPU_CACHED_STREAM_HANDLES=tagged \
          timeout 60 /tmp/csp /tmp/empty.fatbin $m $k 2000)"
        echo "$r start $(MGPU_CACHED_GRAPH=1 MGPU_CACHED_CHAIN=1 MGPU_CACHED_STREAM_HANDLES=tagged \
          LD_PRELOAD=$S timeout 60 /tmp/csp /tmp/empty.fatbin $m $k 2000)"
      done
    done
  done > $O/chain_split.raw
  python3 benchmarks/chain_split_table.py $O/chain_split.raw > $O/chain_split.md 2>&1
  cat $O/chain_split.md
}

chain_pair_same_rounds() {
  cul=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from run import cuda_link; print(' '.join(cuda_link('${CUDA_HOME:-/usr/local/cuda}')))")
  cc -shared -fPIC -O2 -o /tmp/gss.so benchmarks/harness/graph_stream_shim.c -Wl,--no-as-needed $cul -ldl || return 1
  E="MGPU_CACHED_GRAPH=1 MGPU_CACHED_CHAIN=1 MGPU_CACHED_STREAM_HANDLES=tagged"
  E="$E MGPU_CACHED_CUDA_DRIVER=/tmp/gss.so CHAIN_PAIR_SHIM=/tmp/gss.so"
  for p in $(seq "$1"); do
    for t in $2; do
      pre=""; [ $t = start ] && pre=$S
      echo "$t $(env $E LD_PRELOAD=$pre timeout 60 /tmp/cpp /tmp/empty.fatbin 10 200 40)"
      echo "$t $(env $E LD_PRELOAD=$pre timeout 60 /tmp/cpp /tmp/empty.fatbin 100 60 24)"
    done
  done > $O/chain_pair.raw
  python3 benchmarks/chain_pair_table.py $O/chain_pair.raw > $O/chain_pair.md 2>&1
  cat $O/chain_pair.md
}
