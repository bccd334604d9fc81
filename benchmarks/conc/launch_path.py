# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The library's own host time per launch from 1 to 16 threads, with no GPU (issue 21, threads):
builds launch_path_cpu.c, the fake driver of tests/drivers and quick_driver.c over it (the driver's
per-launch entry points answered at once, so only the library's work is timed; the stream path,
which launches from several threads take, MGPU_CACHED_GRAPH=0), runs each mode and
thread count --rounds times, libraries interleaved, and prints the median ns per iteration (each
thread's best of five, averaged over threads). A time that grows with the thread count shows
threads meeting inside the library. Needs a C compiler, no GPU.

    python3 benchmarks/conc/launch_path.py [--iters 200000] [--rounds 5] [--threads 1,2,4,8,16]
                                           [--lib LABEL=PATH ...]

--lib adds another build of the library, preloaded (LD_PRELOAD) in place of the installed one.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import mgpu_cached

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
BLOB = ROOT / "tests" / "data" / "kernels.fatbin"
MODES = ["launch", "get", "exe", "heap"]
sys.path.insert(0, str(ROOT / "benchmarks"))
from chains import rodata_asm  # noqa: E402


def build(d: Path) -> tuple[Path, Path]:
    """The probe and the quick driver (with the fake beside it) in d."""
    fake = d / "libfakecuda.so"
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-pthread", "-o", str(fake),
                    str(ROOT / "tests" / "drivers" / "fakecuda.c")], check=True)
    quick = d / "libquickcuda.so"
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(quick), str(HERE / "quick_driver.c"),
                    "-Wl,--no-as-needed", f"-L{d}", "-lfakecuda", f"-Wl,-rpath,{d}", "-ldl"],
                   check=True)
    asm = rodata_asm(BLOB, d / "blob_exe.S")
    exe = d / "launch_path_cpu"
    subprocess.run(["cc", "-std=c11", "-O2", "-pthread", "-o", str(exe),
                    str(HERE / "launch_path_cpu.c"), str(asm), *mgpu_cached.ldflags_list()],
                   check=True)
    return exe, quick


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=200000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", default="1,2,4,8,16", metavar="COUNTS")
    ap.add_argument("--lib", action="append", default=[], metavar="LABEL=PATH",
                    help="another libmgpu_cached.so, preloaded")
    a = ap.parse_args()
    threads = [t.strip() for t in a.threads.split(",") if t.strip()]
    libs = [("installed", None)] + [tuple(x.split("=", 1)) for x in a.lib]
    res: dict = {}
    with tempfile.TemporaryDirectory() as d:
        exe, quick = build(Path(d))
        for _ in range(a.rounds):
            for label, path in libs:
                for mode in MODES:
                    # the stream path: launches from several threads take it (graph_launch.h)
                    env = dict(os.environ, MGPU_CACHED_BACKEND="cuda", MGPU_CACHED_GRAPH="0",
                               MGPU_CACHED_CUDA_DRIVER=str(quick))
                    env.pop("MGPU_CACHED_DISABLE", None)
                    if path:
                        env["LD_PRELOAD"] = str(Path(path).resolve())
                    out = subprocess.run([str(exe), mode, str(BLOB), str(a.iters), *threads],
                                         env=env, check=True, capture_output=True,
                                         text=True).stdout
                    for line in out.splitlines():
                        if line.startswith("stats "):
                            continue
                        m, t, v = line.split()
                        res.setdefault((label, m, t), []).append(float(v))
    print(f"library host ns per iteration (no GPU: quick_driver.c), median of {a.rounds} rounds")
    print(f"{'library':>12} {'mode':>7} " + " ".join(f"{t + ' thr':>8}" for t in threads))
    for label, _ in libs:
        for mode in MODES:
            print(f"{label:>12} {mode:>7} " +
                  " ".join(f"{statistics.median(res[(label, mode, t)]):>8.1f}" for t in threads))


if __name__ == "__main__":
    main()
