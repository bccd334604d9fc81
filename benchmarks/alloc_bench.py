# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Side-by-side cost of mgpuMemAlloc/mgpuMemFree: the caching allocator (default), the stock calls
with MGPU_CACHED_ALLOCATOR=0, and full stock behaviour (MGPU_CACHED_DISABLE=1), in one process.

Builds benchmarks/alloc_bench.c, loads six copies of the installed libmgpu_cached.so (each copy
is its own instance, configured before first use: default, MGPU_CACHED_ALLOCATOR_ZERO=0,
MGPU_CACHED_ALLOCATOR_ORDERED=1, MGPU_CACHED_ALLOCATOR_RECLAIM_US=0, MGPU_CACHED_ALLOCATOR=0,
MGPU_CACHED_DISABLE=1) and prints the
table alloc_bench prints: µs per alloc+free pair for device and host_shared memory from 256 B to
64 MiB, host_shared with a kernel touching it, and a two-stream step with 3 host_shared buffers
against the same step with buffers made once. With --mlir also the MLIR-compiled alloc_loop (LLVM 19 and 22 code, one host_shared
alloc/kernel/host read/dealloc per step), µs per step in four configurations. Needs a GPU (or MGPU_CACHED_CUDA_DRIVER pointing at a fake driver) and a C compiler.

--pairs (issue 21 item 3) runs only the synchronous pair, mgpuMemAlloc(bytes, NULL) +
mgpuMemFree(p, NULL) (MLIR's synchronous gpu.alloc / gpu.dealloc), 256 B to 64 MiB, device and
host_shared, untouched and with a memset of the block between the two (benchmarks/alloc_pair_bench.c):
cached, SYNC_DIRECT_MAX=0 (every size cached), ZERO=0, stock behaviour and, with --before LIB
(or $ALLOC_BENCH_BEFORE_LIB), a libmgpu_cached.so of an earlier tree, side by side in one process.
With --step DIR it then runs the suite's MLIR async step (benchmarks/run.py, programs async and
async_prealloc, the earlier tree preloaded as the runtime "before") into DIR and prints the
allocating step / the step with buffers made once, for cached and before. About 2-3 minutes on the
H100:

    ALLOC_BENCH_BEFORE_LIB=/path/libmgpu_cached.so python3 benchmarks/alloc_bench.py --pairs --step /tmp/step
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import mgpu_cached

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7, help="interleaved rounds per line (median)")
    ap.add_argument("--mlir", type=int, default=0, metavar="N",
                    help="also run the MLIR alloc_loop programs with N steps")
    ap.add_argument("--pairs", action="store_true",
                    help="only the alloc + free(NULL) pairs (issue 21), see the module's text")
    ap.add_argument("--before", default=os.environ.get("ALLOC_BENCH_BEFORE_LIB", ""),
                    metavar="LIB", help="with --pairs / --step: an earlier tree's libmgpu_cached.so")
    ap.add_argument("--step", type=Path, default=None, metavar="DIR",
                    help="with --pairs: also the MLIR async step against made-once, into DIR")
    args = ap.parse_args()
    if args.pairs:
        pair_table(args.rounds, args.before)
        if args.step:
            step_ratio(args.step, args.before)
        return
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        exe = t / "alloc_bench"
        subprocess.run(["cc", "-std=c11", "-O2", "-o", str(exe),
                        str(ROOT / "benchmarks" / "alloc_bench.c"), "-ldl"], check=True)
        libs = []
        for name in ("cached", "zero0", "ordered", "batch", "alloc0", "stock"):
            p = t / f"libmgpu_cached_{name}.so"
            shutil.copyfile(mgpu_cached.library_path(), p)
            libs.append(str(p))
        fatbin = str(ROOT / "tests" / "data" / "alloc_kernels.fatbin")
        subprocess.run([str(exe), *libs, fatbin, str(args.rounds)], check=True)
        if args.mlir:
            mlir_loop(t, args.mlir, args.rounds)


def pair_table(rounds: int, before: str) -> None:
    """The synchronous pair in copies of the library side by side (alloc_pair_bench.c)."""
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        exe = t / "alloc_pair_bench"
        subprocess.run(["cc", "-std=c11", "-O2", "-o", str(exe),
                        str(ROOT / "benchmarks" / "alloc_pair_bench.c"), "-ldl"], check=True)
        specs = []
        for name, var in (("cached", ""), ("direct0", ":MGPU_CACHED_ALLOCATOR_SYNC_DIRECT_MAX=0"),
                          ("zero0", ":MGPU_CACHED_ALLOCATOR_ZERO=0"),
                          ("stock", ":MGPU_CACHED_DISABLE=1")):
            p = t / f"libmgpu_cached_{len(specs)}.so"
            shutil.copyfile(mgpu_cached.library_path(), p)
            specs.append(f"{name}={p}{var}")
        if before:
            p = t / "libmgpu_cached_before.so"
            shutil.copyfile(before, p)
            specs.append(f"before={p}")
        env = {k: v for k, v in os.environ.items() if k not in CLEARED}
        subprocess.run([str(exe), str(rounds), *specs], env=env, check=True)


def step_ratio(out: Path, before: str) -> None:
    """The suite's async step, allocating and with buffers made once, cached (and before)."""
    cmd = [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--out", str(out),
           "--programs", "async,async_prealloc", "--rounds", "3", "--reps", "5", "--scale", "0.3"]
    if before:
        cmd += ["--config", f"before:LD_PRELOAD={before}"]
    print("\n" + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    res = json.loads((out / "results.json").read_text())
    print("allocating step / step with buffers made once (medians, µs)")
    cells = _step_cells(res)
    for llvm in sorted({k[1] for k in cells}):
        for rt in ("cached", "before", "stock"):
            a, o = cells.get(("async", llvm, rt)), cells.get(("async_prealloc", llvm, rt))
            if a and o:
                print(f"  LLVM {llvm} {rt:<7} {a:8.2f} / {o:8.2f} = {a / o:.3f}x")


def _step_cells(res: object) -> dict:
    """(program, llvm, runtime) -> median µs from run.py's results.json."""
    out = {}
    rows = res.get("cells", res) if isinstance(res, dict) else res
    for row in rows if isinstance(rows, list) else []:
        try:
            out[(row["program"], int(row["llvm"]), row["runtime"])] = float(row["median_us"])
        except (KeyError, TypeError, ValueError):
            continue
    return out


CONFIGS = {"cached": {}, "ZERO=0": {"MGPU_CACHED_ALLOCATOR_ZERO": "0"},
           "RECLAIM_US=0": {"MGPU_CACHED_ALLOCATOR_RECLAIM_US": "0"},
           "ALLOCATOR=0": {"MGPU_CACHED_ALLOCATOR": "0"}, "stock": {"MGPU_CACHED_DISABLE": "1"}}
CLEARED = ("MGPU_CACHED_ALLOCATOR", "MGPU_CACHED_DISABLE", "MGPU_CACHED_ALLOCATOR_ZERO",
           "MGPU_CACHED_ALLOCATOR_ORDERED", "MGPU_CACHED_ALLOCATOR_RECLAIM_US", "MGPU_CACHED_STATS",
           "MGPU_CACHED_STATS_FILE")


def mlir_loop(tmp: Path, n: int, rounds: int) -> None:
    print(f"\nMLIR alloc_loop, us per step ({n} steps, median of {rounds} interleaved runs)")
    print(f"{'program':<22}" + "".join(f" {c:>14}" for c in CONFIGS) +
          f" {'A=0/cached':>11} {'stock/cached':>13}")
    for llvm in (19, 22):
        exe = tmp / f"alloc_loop_llvm{llvm}"
        subprocess.run(["cc", "-std=c11", "-O2", "-o", str(exe),
                        str(ROOT / "benchmarks" / "alloc_loop_main.c"),
                        str(ROOT / "tests" / "data" / "mlir" / f"alloc_loop_llvm{llvm}.o"),
                        *mgpu_cached.ldflags_list(), "-ldl"], check=True)
        times = {c: [] for c in CONFIGS}
        for _ in range(rounds):
            for name, extra in CONFIGS.items():
                env = {k: v for k, v in os.environ.items() if k not in CLEARED}
                env.update(extra)
                out = subprocess.run([str(exe), str(n)], env=env, check=True,
                                     capture_output=True, text=True).stdout
                times[name].append(float(out.split()[0]))
        med = {c: statistics.median(v) for c, v in times.items()}
        print(f"alloc_loop_llvm{llvm:<7}" + "".join(f" {med[c]:>14.2f}" for c in CONFIGS) +
              f" {med['ALLOCATOR=0'] / med['cached']:>11.2f} "
              f"{med['stock'] / med['cached']:>13.2f}")
        for name in ("cached", "ZERO=0", "RECLAIM_US=0"):  # one more run: the counters
            stats = tmp / f"stats_{llvm}_{len(name)}.json"
            env = {k: v for k, v in os.environ.items() if k not in CLEARED}
            env.update(CONFIGS[name], MGPU_CACHED_STATS_FILE=str(stats))
            subprocess.run([str(exe), str(n)], env=env, check=True, capture_output=True)
            st = json.loads(stats.read_text())["stats"]
            print(f"    {name}: " + ", ".join(f"{k} {st[k]}" for k in (
                "alloc_hits", "alloc_misses", "alloc_reclaims", "alloc_bytes_zeroed")))


if __name__ == "__main__":
    main()
