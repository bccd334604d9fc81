# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The first call of a module of 301 kernels (issue 21 item 5), side by side in one run.

    python3 benchmarks/first_call.py --out DIR [--rounds 15] [--n 200] [--reps 3] [--llvm 19,22]
                                     [--before LIBDIR]

Links benchmarks/harness/first_call.c with the committed objects
``tests/data/mlir/large_module_llvm{19,22}.o`` (the empty kernel of a 301-kernel, 0.94 MB module,
``benchmarks/mlir/gen_large_module.py``) and runs one process per (round, LLVM, runtime),
interleaved, the order rotated from round to round (the first call happens once per process):

    cached   linked against the installed libmgpu_cached.so
    stock    the same binary with MGPU_CACHED_DISABLE=1 (the stock wrapper's behaviour)
    before   with --before LIBDIR: the same program linked against LIBDIR/libmgpu_cached.so (a
             build of another tree, e.g. the one before a change: ``python build_runtime.py DIR``)

Each process reports (µs) its constructor's time (LLVM >= 21: the module load), its first and
second bench(1) and the steady per-iteration cost of bench(N) (the per-launch cost, which must not
get worse; medians of the reps after the first, which holds the early launches of a process).
Writes DIR/first_call.md (medians and ratios to stock) and DIR/first_call.json.
Needs an NVIDIA GPU, gcc and the CUDA toolkit's cuda.h (``--cuda`` or $CUDA_HOME).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from run import cuda_link, result_line  # noqa: E402

FIELDS = ("total", "ctor", "first", "second", "steady")


def build(out: Path, llvms: List[int], cuda: str, before: Path | None) -> Dict[Tuple[int, str], Path]:
    """One executable per (LLVM, library)."""
    import mgpu_cached

    libs = {"cached": mgpu_cached.ldflags_list()}
    if before is not None:
        libs["before"] = [f"-L{before}", "-lmgpu_cached", f"-Wl,-rpath,{before.resolve()}"]
    exes = {}
    for v in llvms:
        for kind, flags in libs.items():
            exe = out / f"first_call_llvm{v}_{kind}"
            subprocess.run(["gcc", "-std=c11", "-D_GNU_SOURCE", "-O2",
                            f"-I{ROOT / 'benchmarks/harness'}", f"-I{cuda}/include", "-o", str(exe),
                            str(ROOT / "benchmarks/harness/first_call.c"),
                            str(ROOT / f"tests/data/mlir/large_module_llvm{v}.o"), *flags,
                            *cuda_link(cuda), "-lm"], check=True)
            exes[(v, kind)] = exe
    return exes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--n", type=int, default=200,
                    help="iterations of the steady bench(N) (stock LLVM 19 code: ~0.9 ms each)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--llvm", default="19,22")
    ap.add_argument("--before", type=Path, help="folder of another libmgpu_cached.so")
    ap.add_argument("--cuda", default=os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    args = ap.parse_args()
    llvms = [int(v) for v in args.llvm.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    exes = build(args.out, llvms, args.cuda, args.before)
    runtimes = ["cached", "stock"] + (["before"] if args.before else [])
    base = {k: v for k, v in os.environ.items()
            if not k.startswith("MGPU_CACHED_") or k == "MGPU_CACHED_CUDA_DRIVER"}
    samples: Dict[Tuple[int, str], Dict[str, List[float]]] = {
        (v, r): {f: [] for f in FIELDS} for v in llvms for r in runtimes}
    for rnd in range(args.rounds):
        for v in llvms:
            order = runtimes[rnd % len(runtimes):] + runtimes[:rnd % len(runtimes)]
            for rt in order:
                exe = exes[(v, "before" if rt == "before" else "cached")]
                env = {**base, **({"MGPU_CACHED_DISABLE": "1"} if rt == "stock" else {})}
                proc = subprocess.run([str(exe), str(args.n), str(args.reps)], env=env,
                                      capture_output=True, text=True, timeout=120)
                line = result_line(proc.stdout)
                if proc.returncode or line is None:
                    print(f"LLVM {v} {rt}: exit {proc.returncode}: {proc.stderr}", file=sys.stderr)
                    continue
                res = json.loads(line)
                for f in FIELDS:
                    vals = res[f] if isinstance(res[f], list) else [res[f]]
                    if f == "steady" and len(vals) > 1:
                        vals = vals[1:]  # the first bench(N) holds the early launches (below)
                    samples[(v, rt)][f] += vals
                print(f"round {rnd + 1} LLVM {v} {rt}: {line}", file=sys.stderr)
    med = {key: {f: statistics.median(x) if x else float("nan") for f, x in d.items()}
           for key, d in samples.items()}
    head = ["LLVM", "runtime", "total (ctor + first bench(1))", "ctor", "first", "second",
            "steady µs/launch", "total / stock", "steady / stock"]
    rows = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for v in llvms:
        st = med[(v, "stock")]
        for rt in runtimes:
            m = med[(v, rt)]
            rows.append(f"| {v} | {rt} | " + " | ".join(f"{m[f]:.1f}" if f != "steady" else
                                                      f"{m[f]:.2f}" for f in FIELDS) +
                        f" | {m['total'] / st['total']:.2f}× | {m['steady'] / st['steady']:.2f}× |")
    md = ["# First call of the 301-kernel module (µs, medians)", "",
          f"{args.rounds} processes per cell, interleaved; steady: bench({args.n}) x {args.reps}, "
          f"the first left out (a process's first 100 launches take the stream path and its first "
          f"32 stream creates poll: MGPU_CACHED_GRAPH_FIRST_AFTER, MGPU_CACHED_POOL_SPARE_AFTER)",
          ""] + rows
    (args.out / "first_call.md").write_text("\n".join(md) + "\n")
    (args.out / "first_call.json").write_text(json.dumps(
        {f"{v}:{r}": d for (v, r), d in samples.items()}, indent=1))
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
