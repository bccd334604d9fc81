# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# setup_h100.sh - sourced by run_h100_{a,b,c}.sh on the GPU machine (repository root, `.whl` with the
# cffi/pycparser wheels carried): installs the project, builds the library from csrc/ into
# /tmp/libmc.so, the tree before issue 19 (.gpu/base-src, carried) into .gpu/base/ and a
# session's starting tree (.gpu/start-src) into .gpu/start/ when those are carried too. Sets O (the output folder) and R (the repository root).
O=${OUT:-/tmp/out}
R=$(pwd)
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation . > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
CF="-O2 -std=c11 -D_GNU_SOURCE -fPIC -fvisibility=hidden -shared -pthread -Wl,-z,nodelete"
cc $CF -Icsrc $(find csrc -mindepth 2 -name "*.c") -o /tmp/libmc.so -ldl 2>/dev/null || exit 1
# The trees compared side by side are linked as build_runtime.py links the package (sources in
# sorted path order, bind-now, the soname): preloaded into a binary linked with -lmgpu_cached,
# the soname makes the preloaded copy the only one loaded (without it the installed library was
# loaded beside it, until run M4).
CP="$CF -Wl,-z,now -Wl,-soname,libmgpu_cached.so"
if [ -d .gpu/start-src ]; then  # the tree at the start of a session (issue 21's "before"), if carried
  mkdir -p .gpu/start && cc $CP -I.gpu/start-src/csrc $(find .gpu/start-src/csrc -mindepth 2 -name "*.c" | sort) -o .gpu/start/libmgpu_cached.so -ldl 2>/dev/null || exit 1
fi
if [ -d .gpu/base-src ]; then
  mkdir -p .gpu/base && cc $CP -I.gpu/base-src/csrc $(ls .gpu/base-src/csrc/*.c | sort) -o .gpu/base/libmgpu_cached.so -ldl || exit 1
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > $O/device.txt
