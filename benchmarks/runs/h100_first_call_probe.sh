#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The first call of the 301-kernel module, stage by stage (benchmarks/first_call_probe.c): the
# driver's cuModuleLoadData path (stock and, since issue 21, the cache) against cuLibraryLoadData (the cache before), and mgpuModuleLoad
# cached / stock behaviour; 5 fresh processes each, LLVM 19 and 22 blobs. Run after the package is
# installed (setup_h100.sh). Writes $OUT/first_call_probe.txt.
set -u
O=${OUT:-/tmp/out}
cc -O2 -o /tmp/probe benchmarks/first_call_probe.c -ldl || exit 1
LIB=$(cd /tmp && python3 -c 'import mgpu_cached; print(mgpu_cached.library_path())')
for v in 19 22; do
  python3 -c "import sys; sys.path.insert(0,'benchmarks'); import run; open('/tmp/large$v.fatbin','wb').write(run.extract_blob(open('tests/data/mlir/large_module_llvm$v.o','rb').read()))"
  for i in 1 2 3 4 5; do
    for m in module library; do echo "llvm$v $(/tmp/probe $m /tmp/large$v.fatbin)"; done
    echo "llvm$v cached $(/tmp/probe mgpu /tmp/large$v.fatbin $LIB)"
    echo "llvm$v stock $(MGPU_CACHED_DISABLE=1 /tmp/probe mgpu /tmp/large$v.fatbin $LIB)"
  done
done > $O/first_call_probe.txt 2>&1
sort $O/first_call_probe.txt | head -40
