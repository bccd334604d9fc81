#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The conformance corpus on a GPU machine (an H100: the objects are sm_90 / sm_90a): installs the
# library from this checkout, runs every program of tests/corpus/ (MLIR 19 and 22 objects) in cached
# and stock mode with the checks of corpus.py, then the corpus's pytest modules (CPU half on the
# fake driver, GPU half on the GPU). Run from the repository root (or a worktree's root):
#
#     OUT=/some/dir sh tests/corpus/gpu_run.sh
#
# Writes 4 files to $OUT: gpu_run.log (this script's output: machine, install, summary, pytest),
# corpus.md (table: program x LLVM x mode), corpus.log (every run's stdout and stderr) and
# pytest.log. Exit status 0 when every check passed.
# Needs python3 with pip, gcc, cuda-python and numpy (the GPU tests); cffi and pycparser are
# installed from the wheels in .whl/ (WHL_DIR, default: the first of ./.whl, ../../.whl).
set -u
OUT=${OUT:-/tmp/corpus-out}
mkdir -p "$OUT"
exec >"$OUT/gpu_run.log" 2>&1
echo "== machine"; nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
date -u; git log --oneline -1 2>/dev/null
WHL=${WHL_DIR:-}
for d in .whl ../../.whl; do [ -z "$WHL" ] && [ -d "$d" ] && WHL=$d; done
if [ -n "$WHL" ]; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/site "$WHL"/*.whl
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
python3 -m pip install -q --no-deps --no-build-isolation . || { echo "install failed"; exit 1; }
(cd /tmp && python3 -c "import mgpu_cached; print('installed', mgpu_cached.library_path())")
echo "== corpus (tests/corpus/corpus.py)"
timeout 150 python3 tests/corpus/corpus.py --out "$OUT"
status=$?
echo "corpus.py exit status $status"
cat "$OUT/corpus.md"
echo "== pytest tests/test_corpus.py tests/gpu/test_corpus_gpu.py"
timeout 150 python3 -m pytest -q -p no:cacheprovider -rs tests/test_corpus.py \
  tests/gpu/test_corpus_gpu.py >"$OUT/pytest.log" 2>&1
pst=$?
tail -15 "$OUT/pytest.log"
echo "pytest exit status $pst"
date -u
[ $status -eq 0 ] && [ $pst -eq 0 ]
