# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Launch throughput from 1 to 16 host threads: mgpu-cached against the driver itself, side by side
in one run (issue 4). Builds launch_threads.c, runs each mode as its own process, modes interleaved,
--reps times; prints the median launches/s per mode and thread count and each mode's ratio to the
driver-level loop with the same threads: the median over reps of the ratio within a rep (each rep
runs every mode once, back to back, so a drift of the machine between reps cancels). Needs a GPU
and a C compiler.

    python3 benchmarks/conc/throughput.py [--launches 5000] [--reps 3] [--before LIB] [--diagnose]
                                          [--only LABEL,LABEL...] [--threads 1,2,4,8,16]
                                          [--spin NS,NS...] [--paired]

--before LIB adds the three cached modes run with another build of the library preloaded
(LD_PRELOAD=LIB), e.g. the build before a change, for a before/after comparison in the same run.
--diagnose adds the modes that locate a loss (issue 21; launch_threads.c says what each does):
the driver loop with the context pushed and popped around each launch (what the stock wrapper and
the library do in a thread without a current context: the driver's own cost of that work), the
driver's graph launches from each thread (the graph path's bound under threads), the cached
modes in threads that made the primary context current first (no per-launch context push), the
driver loop with no context current at all (the stream names it; "+ checks": with the
cuCtxGetCurrent and cuCtxGetId the library's bare launches of LLVM <= 20 code make) and the cached
modes with the context pushed and popped around each launch (MGPU_CACHED_BARE_LAUNCH=0), and the
load-per-launch shape with the blob in the executable's .rodata ("exe", as in a program linked
from MLIR's AOT object; the other load shape reads it into the heap, as the JIT runner has it), and
the bound with the heap blob's bytes compared before each launch, as a verified cache must
("+ compare": the heap shape's bound).
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
sys.path.insert(0, str(HERE.parent))
from chains import rodata_asm  # noqa: E402
BLOB = HERE.parent.parent / "tests" / "data" / "kernels.fatbin"
THREADS = [1, 2, 4, 8, 16]
# (label, launch_threads mode, MGPU_CACHED_DISABLE)
MODES = [("driver", "driver", False), ("cached", "mgpu", False), ("stock", "mgpu", True),
         ("cached llvm19-load", "mgpu-load", False), ("stock llvm19-load", "mgpu-load", True)]
DIAGNOSE = [("driver ctx push/pop", "driver-scoped", False), ("driver graph", "driver-graph", False),
            ("cached ctx current", "mgpu-current", False),
            ("cached llvm19-load ctx current", "mgpu-load-current", False),
            ("driver no context", "driver-nocontext", False),
            ("driver no context + checks", "driver-nocontext-checks", False),
            ("cached pushed", "mgpu", False), ("cached llvm19-load pushed", "mgpu-load", False),
            ("cached llvm19-load exe", "mgpu-load-exe", False),
            ("cached graph off", "mgpu", False),
            ("driver no context + checks + 25 ns", "driver-nocontext-checks", False),
            ("driver no context + checks + 50 ns", "driver-nocontext-checks", False),
            ("driver no context + checks + 100 ns", "driver-nocontext-checks", False),
            ("driver no context + checks + 300 ns", "driver-nocontext-checks", False),
            ("driver no context + checks + compare", "driver-nocontext-checks", False)]
# modes run with more of the library's switches set
MODE_ENV = {"cached pushed": {"MGPU_CACHED_BARE_LAUNCH": "0"},
            "cached llvm19-load pushed": {"MGPU_CACHED_BARE_LAUNCH": "0"},
            "cached graph off": {"MGPU_CACHED_GRAPH": "0"},
            "driver no context + checks + 100 ns": {"LT_SPIN_NS": "100"},
            "driver no context + checks + 300 ns": {"LT_SPIN_NS": "300"}}


def run_env(preload: str | None, disable: bool, more: dict) -> dict:
    """A mode's environment: this one, with `preload` preloaded (another build of the library),
    MGPU_CACHED_DISABLE=1 only where `disable`, and `more`."""
    env = dict(os.environ)
    env.pop("MGPU_CACHED_DISABLE", None)
    if preload:
        env["LD_PRELOAD"] = str(Path(preload).resolve())
    if disable:
        env["MGPU_CACHED_DISABLE"] = "1"
    env.update(more)
    return env


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=5000, help="launches per thread")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--before", help="another libmgpu_cached.so to compare (preloaded)")
    ap.add_argument("--diagnose", action="store_true", help="add the modes that locate a loss")
    ap.add_argument("--threads", default=",".join(map(str, THREADS)), metavar="COUNTS",
                    help="comma-separated thread counts (default 1,2,4,8,16)")
    ap.add_argument("--only", default="", metavar="LABELS",
                    help="comma-separated mode labels to run (the driver loop always runs)")
    ap.add_argument("--paired", action="store_true",
                    help="instead: each library shape and the bound in one process, in "
                         "alternating blocks (launch_threads.c's paired modes), --reps processes "
                         "per shape; prints the median over processes of each process's ratio")
    ap.add_argument("--spin", default="", metavar="NS",
                    help="comma-separated host work per launch (ns) for more bound modes "
                         "('driver no context + checks + NS ns'): e.g. the library's own host "
                         "time per launch of each shape, as launch_path.py measures it")
    a = ap.parse_args()
    threads = [int(x) for x in a.threads.split(",") if x.strip()]
    modes = list(MODES)
    if a.before:
        modes += [("before", "mgpu", False), ("before llvm19-load", "mgpu-load", False),
                  ("before llvm19-load exe", "mgpu-load-exe", False)]
    if a.diagnose:
        modes += DIAGNOSE
    mode_env = dict(MODE_ENV)
    for ns in (x.strip() for x in a.spin.split(",") if x.strip()):
        label = f"driver no context + checks + {int(ns)} ns"
        if label not in {m[0] for m in modes}:
            modes.append((label, "driver-nocontext-checks", False))
        mode_env[label] = {"LT_SPIN_NS": str(int(ns))}
    if a.only:
        keep = {x.strip() for x in a.only.split(",")} | {"driver"}
        unknown = keep - {m[0] for m in modes}
        if unknown:
            ap.error(f"unknown mode labels: {sorted(unknown)}")
        modes = [m for m in modes if m[0] in keep]
    with tempfile.TemporaryDirectory() as d:
        exe = Path(d) / "launch_threads"
        # the blob linked into .rodata too, for mgpu-load-exe (as chains.py's 19exe shape)
        asm = rodata_asm(BLOB, Path(d) / "blob_exe.S")
        subprocess.run(["cc", "-std=c11", "-O2", "-pthread", "-o", str(exe),
                        str(HERE / "launch_threads.c"), str(asm), *mgpu_cached.ldflags_list(),
                        "-ldl"], check=True)
        if a.paired:
            paired(exe, threads, a)
            return
        res: dict = {}
        for _ in range(a.reps):
            for label, mode, disable in modes:
                env = run_env(a.before if label.startswith("before") else None, disable,
                              mode_env.get(label, {}))
                out = subprocess.run([str(exe), mode, str(BLOB), str(a.launches),
                                      *map(str, threads)], env=env, check=True,
                                     capture_output=True, text=True).stdout
                for line in out.splitlines():
                    _, t, v = line.rsplit(" ", 2)
                    res.setdefault((label, int(t)), []).append(float(v))
    print(f"empty-kernel launches per second (thousands), {a.launches} async launches per thread "
          f"on its own stream, median of {a.reps}; in brackets: ratio to the driver loop "
          f"(median of the per-rep ratios)")
    # one table per row of modes (a wide run stays readable): at most 6 modes each
    for first in range(0, len(modes), 6):
        part = modes[first:first + 6]
        w = max(24, *(len(m[0]) + 1 for m in part))
        print(f"{'threads':>8} " + " ".join(f"{m[0]:>{w}}" for m in part))
        for t in threads:
            drv = res[("driver", t)]
            cells = []
            for label, _, _ in part:
                v = res[(label, t)]
                ratio = statistics.median(x / d for x, d in zip(v, drv))
                cells.append(f"{statistics.median(v) / 1e3:>15.0f} ({ratio:5.2f})")
            print(f"{t:>8} " + " ".join(f"{c:>{w}}" for c in cells))


# (label, launch_threads mode, more environment): the heap shape twice, the second time against
# the bound that also compares the heap blob per launch, as a verified cache must (LT_COMPARE)
PAIRED = [("cached", "paired-mgpu", {}), ("cached llvm19-load", "paired-mgpu-load", {}),
          ("cached llvm19-load exe", "paired-mgpu-load-exe", {}),
          ("cached llvm19-load vs + compare", "paired-mgpu-load", {"LT_COMPARE": "1"})]


def paired(exe: Path, threads: list[int], a: argparse.Namespace) -> None:
    """--paired: each shape against the bound within one process (the ratio of adjacent blocks),
    --reps processes per shape, shapes interleaved; the median, minimum and maximum over processes
    of each process's ratio, and the median throughputs."""
    shapes = list(PAIRED)
    if a.before:  # the same shapes with the other build preloaded
        shapes += [(label.replace("cached", "before"), mode, env) for label, mode, env in PAIRED]
    res: dict = {}
    for _ in range(a.reps):
        for label, mode, more in shapes:
            env = run_env(a.before if label.startswith("before") else None, False, more)
            out = subprocess.run([str(exe), mode, str(BLOB), str(a.launches), *map(str, threads)],
                                 env=env, check=True, capture_output=True, text=True).stdout
            for line in out.splitlines():
                _, t, bound, lib, ratio = line.split()
                res.setdefault((label, int(t)), []).append((float(bound), float(lib),
                                                            float(ratio)))
    print(f"each library shape against the bound (the driver with no context current and the "
          f"library's two checks) in one process, alternating blocks of {a.launches} launches per "
          f"thread; {a.reps} processes per shape: the median [min, max] over processes of each "
          f"process's median block ratio, and the median launches/s (thousands)")
    print(f"{'threads':>8} {'shape':>32} {'ratio':>22} {'bound':>8} {'shape':>8}")
    for t in threads:
        for label, _, _ in shapes:
            v = res[(label, t)]
            r = [x[2] for x in v]
            print(f"{t:>8} {label:>32} {statistics.median(r):>6.3f} [{min(r):.3f}, {max(r):.3f}]"
                  f" {statistics.median(x[0] for x in v) / 1e3:>8.0f}"
                  f" {statistics.median(x[1] for x in v) / 1e3:>8.0f}")


if __name__ == "__main__":
    main()
