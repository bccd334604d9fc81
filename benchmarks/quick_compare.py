# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Quick side-by-side: µs per iteration of the MLIR-compiled empty-kernel loop (LLVM 19 and 22
code) with libmgpu_cached and with MGPU_CACHED_DISABLE=1 (stock behaviour), in one run.

Each program is run with N and with N/10 iterations; the difference removes process start-up and
module loading. Medians of --reps runs. Needs a GPU and a C compiler; prints a table.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import mgpu_cached

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"


def build(tmp: Path, llvm: int) -> Path:
    exe = tmp / f"empty_llvm{llvm}"
    subprocess.run(["cc", "-std=c11", "-O2", "-o", str(exe), str(DATA / "mlir_harness.c"),
                    str(DATA / "mlir" / f"empty_loop_llvm{llvm}.o"),
                    *mgpu_cached.ldflags_list(), "-ldl"], check=True)
    return exe


def wall(exe: Path, n: int, disable: bool) -> float:
    env = dict(os.environ)
    env.pop("MGPU_CACHED_DISABLE", None)
    if disable:
        env["MGPU_CACHED_DISABLE"] = "1"
    t0 = time.perf_counter()
    subprocess.run([str(exe), str(n)], env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=20000)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for llvm in (19, 22):
            exe = build(Path(d), llvm)
            res = {}
            for disable in (False, True):
                per = []
                for _ in range(a.reps):  # interleaved with the other mode's runs below
                    big = wall(exe, a.n, disable)
                    small = wall(exe, a.n // 10, disable)
                    per.append((big - small) / (a.n - a.n // 10) * 1e6)
                res[disable] = statistics.median(per)
            rows.append((llvm, res[False], res[True]))
    print(f"empty kernel in an scf.for loop, N={a.n}, median of {a.reps} (us per iteration)")
    print(f"{'LLVM':>5} {'cached':>8} {'stock':>8} {'stock/cached':>13}")
    for llvm, c, s in rows:
        print(f"{llvm:>5} {c:8.2f} {s:8.2f} {s / c:13.2f}")


if __name__ == "__main__":
    sys.exit(main())
