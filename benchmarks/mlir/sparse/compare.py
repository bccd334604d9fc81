# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""compare.py - every committed sparse MLIR program (sparse_gpu.mlir: SpMV, SpMM, SDDMM, SpGEMM
through cuSPARSE, 2:4 SpMM through cuSPARSELt; together they call all 31 sparse mgpu* entry
points MLIR 19 emits) in cached mode vs the stock behaviour (MGPU_CACHED_DISABLE=1), side by side
in one run: one table, medians of --reps processes per mode, modes alternating, ratios.

    python3 benchmarks/mlir/sparse/compare.py [--reps 5] [--calls 200] [--warmup 20]
        [--cusparselt PATH] [--lib NAME=LIBDIR ...] [--extra NAME=VAR=VALUE ...] [--out FILE]

Each process runs the five programs (sparse_main.c linked with tests/data/mlir/sparse_gpu_llvm19.o),
each --warmup untimed calls then --calls timed ones, every result checked against a CPU
reference. Per program it reports the steady cost per call of the whole MLIR function (median
over the processes, min-max) and the first call (libraries' first-use costs: kernels, a first
plan). --lib adds another build of the library as a column (e.g. the tree before a change: a
libdir holding its libmgpu_cached.so), run in cached mode; --extra adds a cached-mode column with
one more environment variable (e.g. alloc0=MGPU_CACHED_ALLOCATOR=0). cuSPARSELt: --cusparselt, else
the nvidia-cusparselt wheel found in this Python's site-packages (nvidia/cusparselt/lib), else the
library's own search. Needs cc and the installed package (python -m pip install .).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
PROGRAMS = ("spmv", "spmm", "sddmm", "spgemm", "matmul24")


def find_cusparselt() -> Optional[str]:
    """libcusparseLt.so.0 of an nvidia-cusparselt wheel in this Python's site-packages."""
    for entry in sys.path:
        lib = Path(entry) / "nvidia" / "cusparselt" / "lib" / "libcusparseLt.so.0"
        if lib.exists():
            return str(lib)
    return None


def build(libdir: Path, out: Path) -> Path:
    """sparse_main linked against the libmgpu_cached.so in libdir (RPATH: that one is loaded)."""
    subprocess.run(["cc", "-std=c11", "-D_GNU_SOURCE", "-O2", "-o", str(out),
                    str(HERE / "sparse_main.c"),
                    str(ROOT / "tests" / "data" / "mlir" / "sparse_gpu_llvm19.o"),
                    f"-L{libdir}", "-lmgpu_cached", f"-Wl,-rpath,{libdir}",
                    "-Wl,--disable-new-dtags", "-lm", "-ldl"], check=True)
    return out


def run_once(exe: Path, env: Dict[str, str], calls: int,
             warmup: int) -> Dict[str, Tuple[float, float, bool]]:
    """{program: (us per call, first call us, ok)} of one process."""
    p = subprocess.run([str(exe), "--warmup", str(warmup), "--reps", str(calls), *PROGRAMS],
                       env=env, capture_output=True, text=True, timeout=120)
    out: Dict[str, Tuple[float, float, bool]] = {}
    for line in p.stdout.splitlines():
        f = line.split()
        if len(f) < 3 or f[0] not in PROGRAMS:
            continue
        kv = dict(x.split("=", 1) for x in f[2:] if "=" in x)
        out[f[0]] = (float(kv["us_per_call"]), float(kv.get("first_us", "nan")), f[1] == "ok")
    if p.returncode != 0 or len(out) != len(PROGRAMS):
        sys.stderr.write(f"{exe} rc={p.returncode}\n{p.stdout}{p.stderr[-2000:]}\n")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5, help="processes per mode (median over them)")
    ap.add_argument("--calls", type=int, default=200, help="timed calls per program per process")
    ap.add_argument("--warmup", type=int, default=20, help="untimed calls before them")
    ap.add_argument("--cusparselt", help="path of libcusparseLt.so.0")
    ap.add_argument("--lib", action="append", default=[], metavar="NAME=LIBDIR",
                    help="another libmgpu_cached.so build, cached mode, as a column")
    ap.add_argument("--extra", action="append", default=[], metavar="NAME=VAR=VALUE",
                    help="a cached-mode column with one more environment variable")
    ap.add_argument("--out", help="also write the table here")
    a = ap.parse_args()

    import mgpu_cached
    base = dict(os.environ)
    base.pop("MGPU_CACHED_DISABLE", None)
    lt = a.cusparselt or find_cusparselt()
    if lt:
        base["MGPU_CACHED_CUSPARSELT"] = lt
    tmp = Path(tempfile.mkdtemp(prefix="sparse_compare"))
    exe = build(Path(mgpu_cached.library_path()).parent, tmp / "sparse_main")
    # columns: name -> (executable, environment)
    cols: Dict[str, Tuple[Path, Dict[str, str]]] = {
        "cached": (exe, dict(base)), "stock": (exe, dict(base, MGPU_CACHED_DISABLE="1"))}
    for spec in a.lib:
        name, libdir = spec.split("=", 1)
        cols[name] = (build(Path(libdir), tmp / f"sparse_main_{name}"), dict(base))
    for spec in a.extra:
        name, var, value = spec.split("=", 2)
        cols[name] = (exe, dict(base, **{var: value}))

    res: Dict[str, List[Dict[str, Tuple[float, float, bool]]]] = {c: [] for c in cols}
    for r in range(a.reps):  # modes alternate; the order turns every repetition
        order = list(cols) if r % 2 == 0 else list(reversed(cols))
        for c in order:
            res[c].append(run_once(cols[c][0], cols[c][1], a.calls, a.warmup))

    def med(c: str, prog: str, i: int) -> float:
        xs = [run[prog][i] for run in res[c] if prog in run]
        return statistics.median(xs) if xs else float("nan")

    def span(c: str, prog: str) -> str:
        xs = [run[prog][0] for run in res[c] if prog in run]
        return f"{min(xs):.1f}-{max(xs):.1f}" if xs else "-"

    def ok(c: str, prog: str) -> str:
        runs = [run.get(prog) for run in res[c]]
        return "ok" if all(x and x[2] for x in runs) else "FAIL"

    names = list(cols)
    lines = [f"cuSPARSELt: {lt or '(library search)'}; {a.reps} processes per column, "
             f"{a.warmup} warm-up + {a.calls} timed calls per program each; us per call of the "
             "whole MLIR function (median, min-max), first call (median), ratio = column / stock",
             "",
             "| program | " + " | ".join(f"{c} us/call (min-max)" for c in names) + " | " +
             " | ".join(f"{c}/stock" for c in names if c != "stock") + " | " +
             " | ".join(f"{c} first us" for c in names) + " | results |",
             "|---" * (1 + len(names) + (len(names) - 1) + len(names) + 1) + "|"]
    for prog in PROGRAMS:
        stock = med("stock", prog, 0)
        cells = [f"{med(c, prog, 0):.1f} ({span(c, prog)})" for c in names]
        ratios = [f"{med(c, prog, 0) / stock:.2f}" for c in names if c != "stock"]
        firsts = [f"{med(c, prog, 1):.0f}" for c in names]
        lines.append(f"| {prog} | " + " | ".join(cells + ratios + firsts) + " | " +
                     " ".join(f"{c}:{ok(c, prog)}" for c in names) + " |")
    text = "\n".join(lines)
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")
    return 0 if all(ok(c, p) == "ok" for c in names for p in PROGRAMS) else 1


if __name__ == "__main__":
    sys.exit(main())
