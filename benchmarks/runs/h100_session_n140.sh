#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Run N140 (one H100, nvidia-h100-x1, run N139's machine): launch_path_cpu.c's exe and get shapes at
# one thread, this tree and the session's starting tree (.gpu/start-src) in turn, 12 rounds, every
# process's time printed (run N139's medians had the exe shape 14% slower than start's). Carry
# `.gpu` and `.whl`.
set -u
. benchmarks/neighbour/setup_h100.sh >/dev/null 2>&1
python3 - <<'PY' | tee $O/exe_rounds_n140.txt
import os, subprocess, sys, tempfile
from pathlib import Path
sys.path.insert(0, "benchmarks/conc")
import launch_path as lp
d = Path(tempfile.mkdtemp())
exe, quick = lp.build(d)
env = dict(os.environ, MGPU_CACHED_BACKEND="cuda", MGPU_CACHED_GRAPH="0", MGPU_CACHED_CUDA_DRIVER=str(quick))
for r in range(12):
    row = []
    for lib in (None, ".gpu/start/libmgpu_cached.so"):
        e = dict(env)
        if lib: e["LD_PRELOAD"] = str(Path(lib).resolve())
        for mode in ("exe", "get"):
            out = subprocess.run([str(exe), mode, str(lp.BLOB), "200000", "1"], env=e, capture_output=True, text=True).stdout
            row.append(out.split("\n")[0].split()[2])
    print("now exe/get", row[0], row[1], " start exe/get", row[2], row[3])
PY
