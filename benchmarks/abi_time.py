# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Where a program's step spends its host time, entry point by entry point, for several runtimes
side by side in one run: the README's programs (benchmarks/run.py's harness) and alloc_loop
(benchmarks/alloc_loop_main.c) run under the timing
shim benchmarks/harness/abi_time.c with N and then 2N steps; the difference of the two runs, per
mgpu* entry point, divided by N is its time per step, free of the start-up and the warm-up.

    python3 benchmarks/abi_time.py --out DIR [--programs async,async_prealloc] [--llvm 19,22]
        [--n 2000] [--rounds 5] --config NAME:VAR=VAL[,VAR=VAL] ...

Each --config is a runtime (run.py's syntax: `before:LD_PRELOAD=/path/lib.so` preloads another
build; `nozero:MGPU_CACHED_ALLOCATOR_ZERO=0` sets a switch); "cached", the installed library as
it is, always runs first. Every round runs every (program, LLVM, runtime) once, in turn. Writes
DIR/abi_time.md (per entry point: calls and µs per step, the median over rounds, and each
runtime's difference from "cached") and DIR/abi_time.json (every round's numbers).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import HARNESS, OBJECTS, PROGRAMS, Config, parse_config, runtime_env  # noqa: E402

# (program, llvm, runtime) -> per round: {entry point: (calls per step, ns per step)}
Rounds = Dict[Tuple[str, int, str], List[Dict[str, Tuple[float, float]]]]


def build(bdir: Path, programs: Sequence[str], llvms: Sequence[int]) -> Dict[Tuple[str, int], Path]:
    """run.py's harness for each program and LLVM version (linked with -lmgpu_cached, as run.py's
    "cached" executables), and the shim; {(program, llvm): executable}."""
    import mgpu_cached

    bdir.mkdir(parents=True, exist_ok=True)
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(bdir / "abi_time.so"),
                    str(HARNESS / "abi_time.c"), "-ldl"], check=True)
    exes = {}
    for prog in programs:
        if prog == "alloc_loop":  # benchmarks/alloc_loop_main.c: `exe N`
            for v in llvms:
                exe = bdir / f"alloc_loop_llvm{v}"
                subprocess.run(["gcc", "-std=c11", "-O2", "-o", str(exe),
                                str(HARNESS.parent / "alloc_loop_main.c"),
                                str(OBJECTS / f"alloc_loop_llvm{v}.o"),
                                *mgpu_cached.ldflags_list(), "-ldl"], check=True)
                exes[(prog, v)] = exe
            continue
        stem, macro, _, _ = PROGRAMS[prog]
        for v in llvms:
            obj = OBJECTS / f"{stem}_llvm{v}.o"
            if not obj.exists():
                continue
            exe = bdir / f"{prog}_llvm{v}"
            subprocess.run(["gcc", "-std=c11", "-D_GNU_SOURCE", "-O2", f"-I{HARNESS}", f"-D{macro}",
                            "-o", str(exe), str(HARNESS / "harness.c"), str(obj),
                            *mgpu_cached.ldflags_list(), "-lm"], check=True)
            exes[(prog, v)] = exe
    return exes


def read_counts(path: Path) -> Dict[str, Tuple[int, int]]:
    """The shim's file: {name: (calls, total ns)}."""
    out: Dict[str, Tuple[int, int]] = {}
    for line in path.read_text().splitlines():
        name, calls, ns = line.split()
        out[name] = (int(calls), int(ns))
    return out


def per_step(small: Dict[str, Tuple[int, int]], big: Dict[str, Tuple[int, int]], n: int
             ) -> Dict[str, Tuple[float, float]]:
    """{name: (calls, ns)} per step from runs of n and 2n steps (names of either run)."""
    out = {}
    for name in sorted(set(small) | set(big)):
        c0, t0 = small.get(name, (0, 0))
        c1, t1 = big.get(name, (0, 0))
        if c1 - c0:
            out[name] = ((c1 - c0) / n, (t1 - t0) / n)
    return out


def table(rounds: Rounds, programs: Sequence[str], llvms: Sequence[int], runtimes: Sequence[str]
          ) -> str:
    """Markdown: per program and LLVM version, one row per entry point, µs per step (the median
    over rounds) for each runtime and each runtime's difference from the first."""
    lines: List[str] = []
    for prog in programs:
        for v in llvms:
            cells = {rt: rounds.get((prog, v, rt), []) for rt in runtimes}
            if not any(cells.values()):
                continue
            names = sorted({k for rs in cells.values() for r in rs for k in r})
            head = " | ".join(f"{rt} µs" for rt in runtimes)
            diffs = " | ".join(f"{rt} − {runtimes[0]}" for rt in runtimes[1:])
            lines += [f"### {prog}, LLVM {v} (per step; calls from `{runtimes[0]}`)", "",
                      f"| entry point | calls | {head} | {diffs} |",
                      "| --- | --- |" + " --- |" * (2 * len(runtimes) - 1)]
            rows = list(names) + ["all"]
            for name in rows:
                med = {}
                for rt in runtimes:
                    vals = [sum(x[1] for x in r.values()) if name == "all" else r.get(name, (0, 0))[1]
                            for r in cells[rt]]
                    med[rt] = statistics.median(vals) / 1000 if vals else float("nan")
                base = cells[runtimes[0]]
                calls = (sum(r.get(name, (0, 0))[0] for r in base) / len(base)
                         if base and name != "all" else float("nan"))
                us = " | ".join(f"{med[rt]:.2f}" for rt in runtimes)
                dd = " | ".join(f"{med[rt] - med[runtimes[0]]:+.2f}" for rt in runtimes[1:])
                label = "**all**" if name == "all" else name
                ctext = "" if name == "all" else f"{calls:.2f}"
                lines.append(f"| {label} | {ctext} | {us} | {dd} |")
            lines.append("")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--programs", default="async,async_prealloc")
    ap.add_argument("--llvm", default="19,22")
    ap.add_argument("--n", type=int, default=2000, help="steps of the shorter run")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--config", type=parse_config, action="append", default=[])
    ap.add_argument("--fake", action="store_true",
                    help="a fake driver computes nothing: a failed result check is not an error")
    args = ap.parse_args(argv)
    programs = [p for p in args.programs.split(",") if p]
    llvms = [int(v) for v in args.llvm.split(",") if v]
    unknown = [p for p in programs if p not in PROGRAMS and p != "alloc_loop"]
    if unknown:
        ap.error(f"unknown programs {unknown}; known: {sorted(PROGRAMS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    bdir = args.out / "build"
    exes = build(bdir, programs, llvms)
    shim = bdir / "abi_time.so"
    configs: Dict[str, Config] = {c.name: c for c in args.config}
    runtimes = ["cached"] + list(configs)
    rounds: Rounds = {}
    for rnd in range(args.rounds):
        for prog in programs:
            for v in llvms:
                exe = exes.get((prog, v))
                if exe is None:
                    continue
                for rt in runtimes:
                    env = runtime_env(rt, configs, None)
                    counts = []
                    for n in (args.n, 2 * args.n):
                        f = args.out / "counts.txt"
                        env2 = dict(env, ABI_TIME_OUT=str(f),
                                    LD_PRELOAD=" ".join(x for x in (str(shim), env.get("LD_PRELOAD", ""))
                                                        if x))
                        argv = [str(exe), str(n)] + ([] if prog == "alloc_loop" else ["1", "50"])
                        proc = subprocess.run(argv, env=env2,
                                              capture_output=True, text=True, timeout=300)
                        ok = proc.returncode == 0 or (args.fake and proc.returncode == 1)
                        if not ok or not f.exists():
                            sys.stderr.write(f"{prog} {v} {rt} n={n}: rc {proc.returncode}\n"
                                             f"{proc.stderr[-2000:]}")
                            return 1
                        counts.append(read_counts(f))
                        f.unlink()
                    rounds.setdefault((prog, v, rt), []).append(per_step(*counts, args.n))
        print(f"round {rnd + 1}/{args.rounds} done", flush=True)
    md = table(rounds, programs, llvms, runtimes)
    (args.out / "abi_time.md").write_text(md + "\n")
    (args.out / "abi_time.json").write_text(json.dumps(
        {f"{p}|{v}|{rt}": rs for (p, v, rt), rs in rounds.items()}, indent=1))
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
