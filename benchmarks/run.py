# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The benchmark suite: MLIR-compiled programs under every runtime, side by side in one run.

    python3 benchmarks/run.py --out DIR [--rounds 3] [--reps 5] [--config NAME:VAR=VAL[,VAR=VAL]]...
                              [--skip stock,stock-named,preload]

Needs an NVIDIA GPU, gcc and the CUDA toolkit's cuda.h (for the floor; ``--cuda`` or $CUDA_HOME,
default /usr/local/cuda), and the installed ``mgpu_cached`` package. It links the committed objects
``tests/data/mlir/<program>_llvm{19,22}.o`` (compiled by ``benchmarks/mlir/compile.sh``) with the
harness ``benchmarks/harness/harness.c``, builds the driver-level floor
``benchmarks/harness/floor.c`` on the kernels extracted from those same objects, and runs each
program under each runtime, interleaved: every round runs every (program, LLVM, runtime) once, in
an order rotated from round to round, so drift hits all runtimes alike. Runtimes:

    floor        the same kernels straight through the CUDA driver, module and streams made once
    cached       linked against libmgpu_cached.so
    stock        the same binary with MGPU_CACHED_DISABLE=1 (the stock wrapper's behaviour)
    stock-named  linked against lib/stock-name/libmlir_cuda_runtime.so, MGPU_CACHED_DISABLE=1
    preload      that binary with LD_PRELOAD=libmgpu_cached.so (and no MGPU_CACHED_DISABLE)
    NAME         from --config NAME:VAR=VAL,...: the cached binary with those variables added

``--skip`` leaves out any of stock, stock-named and preload (their columns read "–"): more rounds of
the others in the same time, e.g. for a side-by-side run of two library trees.

``--extras threads,chains,alloc,first_call`` (or ``--extras all``) then runs the separate
measurements of issue 21 as their own scripts, each side by side inside itself, and appends their
tables to DIR/results.md (their output under DIR/extras/, their data in results.json's "extras"):

    threads     benchmarks/conc/throughput.py --diagnose: 1-16 threads, each on its own stream,
                against the driver loop with the same threads (table: DIR/extras/threads.txt)
    chains      benchmarks/chains.py --k 10,100 --llvm 22,19 (of --llvm): chains of launches + one
                sync against hand-made graphs (DIR/extras/chains/chains.md, chains.json)
    alloc       benchmarks/alloc_bench.py --pairs: mgpuMemAlloc + mgpuMemFree(p, NULL), 256 B to
                64 MiB, device and host_shared, cached / clearing off / stock (DIR/extras/alloc.txt)
    first_call  benchmarks/first_call.py: the first call of the 301-kernel module, cached and
                stock (DIR/extras/first_call/first_call.md, first_call.json)

A ``--config NAME:LD_PRELOAD=LIB`` (another tree's libmgpu_cached.so) is passed on as the scripts'
``--before`` (threads, alloc; first_call takes LIB's folder): the earlier tree's column side by side
in the same run. Chains and other --config variables have no such column (results.md says so).
``--extras-only`` runs the extras without the programs.

Each run prints one JSON line (µs per iteration of each timed repetition, a hash of the final
results, a CPU-reference check). Results must be identical across runtimes: the suite exits 1
if a check fails or a hash differs. Writes DIR/results.md, DIR/results.json, DIR/command.txt and,
with matplotlib, DIR/suite.png.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import struct
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parent.parent
HARNESS = ROOT / "benchmarks" / "harness"
OBJECTS = ROOT / "tests" / "data" / "mlir"

# program -> (object stem, harness macro, floor program, default n)
PROGRAMS: Dict[str, Tuple[str, str, str, int]] = {
    "empty": ("empty_loop", "PROG_EMPTY", "empty", 20000),
    # the empty kernel of a 301-kernel module (0.94 MB fatbin, benchmarks/mlir/gen_large_module.py);
    # the floor launches the same kernel from the same blob. Stock LLVM 19 code loads the 0.9 MB
    # module per launch (few iterations); LLVM 22 code once, at start-up
    "large": ("large_module", "PROG_LARGE", "empty", 1000),
    "stencil": ("stencil", "PROG_STENCIL", "stencil", 20000),
    "async": ("async_step", "PROG_ASYNC", "async_alloc", 2000),
    "async_prealloc": ("async_step", "PROG_ASYNC_PREALLOC", "async_prealloc", 2000),
}
BUILTIN_RUNTIMES = ("floor", "cached", "stock", "stock-named", "preload")
SKIPPABLE = ("stock", "stock-named", "preload")  # --skip: floor and cached give the ratios
BLOB_SYMBOLS = (b"kernels_binary", b"kernels_bin_cst")  # LLVM 22 / LLVM 19 names of the blob
EXTRAS = ("threads", "chains", "alloc", "first_call")  # --extras, in the order they run


@dataclass(frozen=True)
class Config:
    """An extra runtime: the cached binary with environment variables added."""
    name: str
    env: Tuple[Tuple[str, str], ...]


def parse_config(text: str) -> Config:
    """``NAME:VAR=VAL[,VAR=VAL...]`` -> Config. Raises ValueError on a malformed spec."""
    name, sep, rest = text.partition(":")
    name = name.strip()
    if not sep or not name or not rest.strip():
        raise ValueError(f"--config {text!r}: expected NAME:VAR=VAL[,VAR=VAL]")
    if name in BUILTIN_RUNTIMES:
        raise ValueError(f"--config {text!r}: {name!r} is a built-in runtime name")
    pairs = []
    for item in rest.split(","):
        var, eq, val = item.partition("=")
        if not eq or not var.strip() or not var.strip().replace("_", "").isalnum():
            raise ValueError(f"--config {text!r}: {item!r} is not VAR=VAL")
        pairs.append((var.strip(), val))
    return Config(name, tuple(pairs))


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path, help="folder for the results")
    ap.add_argument("--rounds", type=int, default=3, help="processes per runtime (interleaved)")
    ap.add_argument("--reps", type=int, default=5, help="timed repetitions inside each process")
    ap.add_argument("--warmup", type=int, default=200, help="untimed iterations first")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every program's N")
    ap.add_argument("--programs", default=",".join(PROGRAMS),
                    help=f"comma list of {', '.join(PROGRAMS)}")
    ap.add_argument("--llvm", default="19,22", help="comma list of 19, 22")
    ap.add_argument("--config", action="append", default=[], type=_config_arg,
                    metavar="NAME:VAR=VAL[,VAR=VAL]",
                    help="an extra runtime: the cached binary with these variables (repeatable)")
    ap.add_argument("--cuda", default=os.environ.get("CUDA_HOME", "/usr/local/cuda"),
                    help="CUDA toolkit folder (for include/cuda.h)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per process")
    ap.add_argument("--skip", default="", help="comma list of stock, stock-named, preload: "
                    "built-in runtimes not to run")
    ap.add_argument("--extras", default="",
                    help=f"comma list of {', '.join(EXTRAS)}, or all: the separate measurements "
                    "run after the programs, their tables appended to results.md")
    ap.add_argument("--extras-only", action="store_true",
                    help="run only the --extras (no programs)")
    ap.add_argument("--callcost", action="store_true",
                    help="also time each mgpu* call, cached and stock (DIR/callcost.txt)")
    args = ap.parse_args(argv)
    args.programs = _list(args.programs, PROGRAMS, "--programs")
    args.llvm = [int(v) for v in _list(args.llvm, ("19", "22"), "--llvm")]
    args.skip = _list(args.skip, SKIPPABLE, "--skip") if args.skip.strip() else []
    extras = args.extras.strip()
    args.extras = list(EXTRAS) if extras == "all" else (
        _list(extras, EXTRAS, "--extras") if extras else [])
    args.extras = [e for e in EXTRAS if e in args.extras]  # the order they run in
    if args.extras_only and not args.extras:
        ap.error("--extras-only needs --extras")
    names = [c.name for c in args.config]
    if len(set(names)) != len(names):
        ap.error("--config names must be distinct")
    if args.rounds < 1 or args.reps < 1 or args.reps > 64 or args.scale <= 0:
        ap.error("need --rounds >= 1, 1 <= --reps <= 64, --scale > 0")
    return args


def _config_arg(text: str) -> Config:
    try:
        return parse_config(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _list(text: str, allowed: Sequence[str], flag: str) -> List[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in items if t not in allowed]
    if bad or not items:
        raise SystemExit(f"{flag}: unknown {bad or 'empty list'}; choose from {', '.join(allowed)}")
    return items


# ---- the kernel blob inside an MLIR object ------------------------------------------------------

def extract_blob(obj: bytes) -> bytes:
    """The gpu.binary blob (a fatbin) embedded in an x86-64 ELF relocatable object compiled
    by MLIR: the bytes of the symbol kernels_binary (LLVM 22) or kernels_bin_cst (LLVM 19)."""
    if obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF object")
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum)]
    for sh in sections:
        if sh[1] != 2:  # SHT_SYMTAB
            continue
        strtab = sections[sh[6]]
        for off in range(sh[4], sh[4] + sh[5], 24):
            st_name, _info, _other, shndx, value, size = struct.unpack_from("<IBBHQQ", obj, off)
            start = strtab[4] + st_name
            name = obj[start:obj.index(b"\0", start)]
            if name in BLOB_SYMBOLS and 0 < shndx < len(sections):
                base = sections[shndx][4]
                return obj[base + value:base + value + size]
    raise ValueError("no kernels_binary / kernels_bin_cst symbol")


# ---- building ---------------------------------------------------------------------------------

def _sh(cmd: List[str]) -> None:
    print("+ " + " ".join(shlex.quote(c) for c in cmd), file=sys.stderr)
    subprocess.run(cmd, check=True)


def cuda_link(cuda: str) -> List[str]:
    """Linker arguments for the CUDA driver: the toolkit's stub under ``cuda`` (its SONAME is
    libcuda.so.1: the driver's library at run time), or the driver's library itself."""
    stubs = [d for d in (f"{cuda}/lib64/stubs", f"{cuda}/targets/x86_64-linux/lib/stubs")
             if Path(d, "libcuda.so").exists()]
    return [f"-L{stubs[0]}", "-lcuda"] if stubs else ["-l:libcuda.so.1"]


def build(build: Path, programs: Sequence[str], llvms: Sequence[int], cuda: str
          ) -> Dict[str, Path]:
    """Compile everything; returns {key: executable or blob path}."""
    import mgpu_cached

    build.mkdir(parents=True, exist_ok=True)
    out: Dict[str, Path] = {}
    cflags = ["-std=c11", "-D_GNU_SOURCE", "-O2", f"-I{HARNESS}"]
    stock = str(mgpu_cached.stock_libdir())
    floor = build / "floor"
    cuda_link_args = cuda_link(cuda)
    _sh(["gcc", *cflags, f"-I{cuda}/include", "-o", str(floor), str(HARNESS / "floor.c"),
         *cuda_link_args, "-lm"])
    out["floor"] = floor
    callcost = build / "callcost"
    _sh(["gcc", *cflags, f"-I{cuda}/include", "-o", str(callcost), str(HARNESS / "callcost.c"),
         *mgpu_cached.ldflags_list(), *cuda_link_args, "-lm"])
    out["callcost"] = callcost
    blob = build / "empty_loop.fatbin"
    blob.write_bytes(extract_blob((OBJECTS / "empty_loop_llvm22.o").read_bytes()))
    out["blob:callcost"] = blob
    for prog in programs:
        stem, macro, _, _ = PROGRAMS[prog]
        for v in llvms:
            obj = OBJECTS / f"{stem}_llvm{v}.o"
            if not obj.exists():  # a program without an object for this version: that cell is skipped
                print(f"no {obj.name}: {prog} LLVM {v} skipped", file=sys.stderr)
                continue
            blob = build / f"{stem}_llvm{v}.fatbin"
            blob.write_bytes(extract_blob(obj.read_bytes()))
            out[f"blob:{prog}:{v}"] = blob
            for kind, libflags in (("cached", mgpu_cached.ldflags_list()),
                                   ("stock-named", [f"-L{stock}", "-lmlir_cuda_runtime",
                                                    f"-Wl,-rpath,{stock}"])):
                exe = build / f"{prog}_llvm{v}_{kind}"
                _sh(["gcc", *cflags, f"-D{macro}", "-o", str(exe), str(HARNESS / "harness.c"),
                     str(obj), *libflags, "-lm"])
                out[f"{kind}:{prog}:{v}"] = exe
    return out


# ---- running ----------------------------------------------------------------------------------

@dataclass
class Cell:
    """All runs of one (program, LLVM, runtime)."""
    samples: List[float] = field(default_factory=list)
    hashes: List[str] = field(default_factory=list)
    checks: List[str] = field(default_factory=list)
    extra: Dict[str, object] = field(default_factory=dict)

    @property
    def median(self) -> float:
        return statistics.median(self.samples) if self.samples else float("nan")


def runtime_env(runtime: str, configs: Dict[str, Config], stats_file: Optional[Path]
                ) -> Dict[str, str]:
    """The environment of one run (the parent's, minus the library's switches, plus the
    runtime's)."""
    import mgpu_cached

    env = {k: v for k, v in os.environ.items()  # the driver choice passes, no other switch
           if (not k.startswith("MGPU_CACHED_") or k == "MGPU_CACHED_CUDA_DRIVER")
           and k != "LD_PRELOAD"}
    if runtime in ("stock", "stock-named"):
        env["MGPU_CACHED_DISABLE"] = "1"
    elif runtime == "preload":
        env["LD_PRELOAD"] = str(mgpu_cached.library_path())
    elif runtime in configs:
        env.update(dict(configs[runtime].env))
    if stats_file is not None and runtime != "floor":
        env["MGPU_CACHED_STATS_FILE"] = str(stats_file)
    return env


def command_for(runtime: str, prog: str, v: int, exes: Dict[str, Path], n: int, reps: int,
                warm: int) -> List[str]:
    counts = [str(n), str(reps), str(warm)]
    if runtime == "floor":
        return [str(exes["floor"]), PROGRAMS[prog][2], str(exes[f"blob:{prog}:{v}"]), *counts]
    kind = "stock-named" if runtime in ("stock-named", "preload") else "cached"
    return [str(exes[f"{kind}:{prog}:{v}"]), *counts]


def result_line(stdout: str) -> Optional[str]:
    """The JSON result line a harness program prints (its first line starting with ``{``)."""
    return next((ln for ln in stdout.splitlines() if ln.startswith("{")), None)


def run_all(args: argparse.Namespace, exes: Dict[str, Path], build_dir: Path
            ) -> Dict[Tuple[str, int, str], Cell]:
    configs = {c.name: c for c in args.config}
    runtimes = [r for r in BUILTIN_RUNTIMES if r not in getattr(args, "skip", [])] + list(configs)
    cells: Dict[Tuple[str, int, str], Cell] = {}
    total = args.rounds * len(args.programs) * len(args.llvm) * len(runtimes)
    done = 0
    for rnd in range(args.rounds):
        for prog in args.programs:
            n = max(2, int(PROGRAMS[prog][3] * args.scale))
            warm = min(args.warmup, n)
            for v in args.llvm:
                if f"blob:{prog}:{v}" not in exes:
                    continue
                shift = rnd % len(runtimes)
                for runtime in runtimes[shift:] + runtimes[:shift]:
                    done += 1
                    stats = build_dir / f"stats-{prog}-{v}-{runtime}.json"
                    cmd = command_for(runtime, prog, v, exes, n, args.reps, warm)
                    print(f"[{done}/{total}] round {rnd + 1} {prog} LLVM {v} {runtime}",
                          file=sys.stderr, flush=True)
                    cell = cells.setdefault((prog, v, runtime), Cell())
                    try:
                        proc = subprocess.run(cmd, env=runtime_env(runtime, configs, stats),
                                              capture_output=True, text=True,
                                              timeout=args.timeout)
                    except subprocess.TimeoutExpired:
                        cell.checks.append(f"FAIL timed out after {args.timeout} s")
                        continue
                    if proc.stderr.strip():
                        print(proc.stderr.rstrip(), file=sys.stderr)
                    line = result_line(proc.stdout)
                    if line is None:
                        cell.checks.append(f"FAIL exit {proc.returncode}, no result")
                        continue
                    res = json.loads(line)
                    cell.samples.extend(res["us"])
                    cell.hashes.append(res["hash"])
                    cell.checks.append(res["check"] if proc.returncode == 0
                                       else f"FAIL exit {proc.returncode}: {res['check']}")
                    if "kernel_us" in res:
                        cell.extra.setdefault("kernel_us", []).append(res["kernel_us"])
                    if stats.exists():
                        cell.extra["stats"] = json.loads(stats.read_text()).get("stats", {})
                        stats.unlink()
    return cells


# ---- reporting ------------------------------------------------------------------------------

def consistency(cells: Dict[Tuple[str, int, str], Cell]) -> List[str]:
    """Problems: failed checks, and hashes that differ across runs of one (program, LLVM)."""
    problems = []
    groups: Dict[Tuple[str, int], Dict[str, List[str]]] = {}
    for (prog, v, runtime), cell in cells.items():
        for c in cell.checks:
            if c not in ("ok", "none"):
                problems.append(f"{prog} LLVM {v} {runtime}: check {c}")
        groups.setdefault((prog, v), {})[runtime] = cell.hashes
    for (prog, v), by_rt in sorted(groups.items()):
        distinct = {h for hs in by_rt.values() for h in hs}
        if len(distinct) > 1:
            detail = "; ".join(f"{rt}={sorted(set(hs))}" for rt, hs in by_rt.items())
            problems.append(f"{prog} LLVM {v}: results differ across runtimes: {detail}")
    return list(dict.fromkeys(problems))  # once each, in order


def _fmt(x: float) -> str:
    return "–" if x != x else f"{x:.2f}"


def _ratio(a: float, b: float) -> str:
    return "–" if a != a or b != b or b == 0 else f"{a / b:.2f}×"


def table(cells: Dict[Tuple[str, int, str], Cell], programs: Sequence[str], llvms: Sequence[int],
          extra: Sequence[str]) -> str:
    """Markdown: medians (µs per iteration) per runtime and the headline ratios."""
    runtimes = list(BUILTIN_RUNTIMES) + list(extra)
    head = (["program", "LLVM"] + runtimes +
            ["cached/floor", "stock/cached", "preload/cached"] + [f"{e}/cached" for e in extra] +
            [f"{e}/floor" for e in extra])
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for prog in programs:
        for v in llvms:
            med = {rt: cells[(prog, v, rt)].median if (prog, v, rt) in cells else float("nan")
                   for rt in runtimes}
            if all(m != m for m in med.values()):
                continue  # not built (no object for this LLVM)
            row = [prog, str(v)] + [_fmt(med[rt]) for rt in runtimes]
            row += [_ratio(med["cached"], med["floor"]), _ratio(med["stock"], med["cached"]),
                    _ratio(med["preload"], med["cached"])]
            row += [_ratio(med[e], med["cached"]) for e in extra]
            row += [_ratio(med[e], med["floor"]) for e in extra]
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def async_breakdown(cells: Dict[Tuple[str, int, str], Cell], llvms: Sequence[int]) -> str:
    """Where the time of one async step goes: GPU kernel time (events, floor), the driver-level
    step with and without the allocations, the MLIR step under each runtime."""
    out = []
    for v in llvms:
        pre = cells.get(("async_prealloc", v, "floor"))
        if pre is None or "kernel_us" not in pre.extra:
            continue
        ks = pre.extra["kernel_us"]
        span = statistics.median(k["step_span"] for k in ks)
        kern = {name: statistics.median(k[name] for k in ks)
                for name in ("produce_a", "produce_b", "combine")}
        rows = [("GPU: produce_a / produce_b / combine (events)",
                 " / ".join(f"{kern[k]:.2f}" for k in kern)),
                ("GPU: one step, first producer start to combine end", f"{span:.2f}")]
        for label, key in (("driver floor, buffers made once", ("async_prealloc", v, "floor")),
                           ("driver floor, 3 cuMemAllocManaged+cuMemFree per step",
                            ("async", v, "floor")),
                           ("MLIR, buffers made once, cached", ("async_prealloc", v, "cached")),
                           ("MLIR, buffers made once, stock", ("async_prealloc", v, "stock")),
                           ("MLIR, alloc+free per step, cached", ("async", v, "cached")),
                           ("MLIR, alloc+free per step, stock", ("async", v, "stock"))):
            c = cells.get(key)
            if c is not None:
                rows.append((label, f"{c.median:.2f} (kernel share {span / c.median:.0%})"))
        out.append(f"async step, LLVM {v} (µs per step, medians)\n\n| | µs |\n| --- | --- |\n" +
                   "\n".join(f"| {a} | {b} |" for a, b in rows))
    return "\n\n".join(out)


COUNTERS = ("launches", "graph_launches", "graph_updates", "graph_update_skips",
            "graph_instantiates", "graph_full", "module_hits", "verify_skips",
            "driver_stream_creates", "alloc_hits", "alloc_misses", "alloc_headroom_checks")


def counters(cells: Dict[Tuple[str, int, str], Cell]) -> str:
    """The library's counters of each cell's last run (which path the launches took)."""
    rows = []
    for (p, v, rt), c in sorted(cells.items()):
        st = c.extra.get("stats")
        if st:
            rows.append(f"| {p} | {v} | {rt} | " + " | ".join(str(st.get(k, "")) for k in COUNTERS)
                        + " |")
    if not rows:
        return ""
    return ("library counters, last run of each cell\n\n| program | LLVM | runtime | " +
            " | ".join(COUNTERS) + " |\n|" + " --- |" * (3 + len(COUNTERS)) + "\n" +
            "\n".join(rows))


def plot(cells: Dict[Tuple[str, int, str], Cell], path: Path, programs: Sequence[str],
         llvms: Sequence[int], runtimes: Sequence[str]) -> Optional[str]:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: no plot (pip install matplotlib)"
    fig, axes = plt.subplots(len(llvms), len(programs), squeeze=False,
                             figsize=(3.4 * len(programs), 3.4 * len(llvms)))
    for ax, (p, v) in zip(axes.T.flat, [(p, v) for p in programs for v in llvms]):
        names = [rt for rt in runtimes if (p, v, rt) in cells and cells[(p, v, rt)].samples]
        ax.boxplot([cells[(p, v, rt)].samples for rt in names], showfliers=False)
        ax.set_xticks(range(1, len(names) + 1), names, rotation=60, fontsize=7)
        ax.set_title(f"{p}, LLVM {v}", fontsize=9)
        ax.set_ylabel("µs per iteration", fontsize=8)
        ax.set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return None


# ---- extras: the separate measurements (issue 21), run as their own scripts ---------------------

@dataclass
class Extra:
    """One extra measurement: its command, where its table lands, and how it went."""
    name: str
    command: List[str]
    table: Path            # its table: a markdown file the script writes, or its saved stdout
    data: Optional[Path]   # the script's JSON data, where it writes some
    note: str = ""         # what this run could not compare (shown above the table)
    returncode: Optional[int] = None
    text: str = ""         # the table's text once run


def before_library(configs: Sequence[Config]) -> Tuple[Optional[str], List[str]]:
    """The library of the first --config that preloads one (``LD_PRELOAD=LIB``): the extras'
    ``--before``; and the names of the configs the extras cannot reproduce."""
    lib, others = None, []
    for c in configs:
        env = dict(c.env)
        if lib is None and set(env) == {"LD_PRELOAD"}:
            lib = env["LD_PRELOAD"]
        else:
            others.append(c.name)
    return lib, others


def extra_plan(args: argparse.Namespace) -> List[Extra]:
    """The commands of the --extras, in order, with the --config's preloaded library passed on."""
    py, bench = sys.executable, ROOT / "benchmarks"
    out = args.out / "extras"
    lib, others = before_library(args.config)
    missing = (f"--config {', '.join(others)}: no column here (the script has no such option)"
               if others else "")
    plan: List[Extra] = []
    for name in args.extras:
        before: List[str] = []
        note = missing
        if name == "threads":
            cmd = [py, str(bench / "conc" / "throughput.py"), "--diagnose",
                   "--reps", str(max(3, args.rounds))]
            before = ["--before", lib] if lib else []
            plan.append(Extra(name, cmd + before, out / "threads.txt", None, note))
        elif name == "chains":
            shapes = ",".join(str(v) for v in sorted(args.llvm, reverse=True))
            cmd = [py, str(bench / "chains.py"), "--out", str(out / "chains"), "--k", "10,100",
                   "--llvm", shapes, "--rounds", str(args.rounds), "--reps", str(args.reps),
                   "--cuda", args.cuda]
            if lib:
                note = "; ".join(filter(None, [f"--config {_before_name(args.config)}: chains.py "
                                               "has no --before column", missing]))
            plan.append(Extra(name, cmd, out / "chains" / "chains.md",
                              out / "chains" / "chains.json", note))
        elif name == "alloc":
            cmd = [py, str(bench / "alloc_bench.py"), "--pairs",
                   "--rounds", str(max(7, args.rounds))]
            before = ["--before", lib] if lib else []
            plan.append(Extra(name, cmd + before, out / "alloc.txt", None, note))
        elif name == "first_call":
            cmd = [py, str(bench / "first_call.py"), "--out", str(out / "first_call"),
                   "--llvm", ",".join(str(v) for v in args.llvm), "--cuda", args.cuda]
            if lib and Path(lib).name == "libmgpu_cached.so":
                before = ["--before", str(Path(lib).parent)]
            elif lib:
                note = "; ".join(filter(None, [f"--config {_before_name(args.config)}: "
                                               "first_call.py links LIBDIR/libmgpu_cached.so; "
                                               f"{lib} is not named so", missing]))
            plan.append(Extra(name, cmd + before, out / "first_call" / "first_call.md",
                              out / "first_call" / "first_call.json", note))
    return plan


def _before_name(configs: Sequence[Config]) -> str:
    return next(c.name for c in configs if set(dict(c.env)) == {"LD_PRELOAD"})


def run_extras(plan: List[Extra], env: Dict[str, str], timeout: float) -> None:
    """Run each extra; a script that prints its table (no --out) has its stdout saved as the
    table. Fills returncode and text; the scripts' stderr goes to DIR/extras/NAME.log."""
    for ex in plan:
        ex.table.parent.mkdir(parents=True, exist_ok=True)
        print(f"+ extra {ex.name}: " + " ".join(shlex.quote(c) for c in ex.command),
              file=sys.stderr, flush=True)
        log = ex.table.parent / f"{ex.name}.log"
        try:
            proc = subprocess.run(ex.command, env=env, capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            ex.returncode, ex.text = -1, f"timed out after {timeout:.0f} s"
            continue
        log.write_text(proc.stderr)
        ex.returncode = proc.returncode
        if ex.data is None:  # the script prints its table
            ex.table.write_text(proc.stdout)
        ex.text = ex.table.read_text() if ex.table.exists() else proc.stdout
        print(ex.text, file=sys.stderr)


def extras_markdown(plan: Sequence[Extra]) -> Tuple[str, List[str]]:
    """The extras' section of results.md, and a problem for each extra that failed."""
    md, problems = [], []
    for ex in plan:
        md += [f"## {ex.name}", "", "`" + " ".join(shlex.quote(c) for c in ex.command) + "`", ""]
        if ex.note:
            md += [ex.note, ""]
        if ex.returncode != 0:
            problems.append(f"extra {ex.name}: " + (ex.text if ex.returncode == -1 else
                                                    f"exit {ex.returncode}"))
            md += [f"FAILED ({problems[-1]}); its log: {ex.table.parent / (ex.name + '.log')}",
                   ""]
            if ex.returncode == -1:
                continue
        body = ex.text.strip()
        if not body:
            continue
        if ex.table.suffix == ".md":  # the script's own markdown; its title one level down
            body = "\n".join("#" + ln if ln.startswith("# ") else ln for ln in body.splitlines())
            md += [body, ""]
        else:
            md += ["```", body, "```", ""]
    return "\n".join(md), problems


def extras_json(plan: Sequence[Extra]) -> List[Dict[str, object]]:
    """results.json's "extras": each one's command, status, table and data."""
    out = []
    for ex in plan:
        data = None
        if ex.data is not None and ex.data.exists():
            data = json.loads(ex.data.read_text())
        out.append({"name": ex.name, "command": ex.command, "returncode": ex.returncode,
                    "note": ex.note, "table_file": str(ex.table), "table": ex.text,
                    "data": data})
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    extra = [c.name for c in args.config]
    cells: Dict[Tuple[str, int, str], Cell] = {}
    md: List[str] = []
    if not args.extras_only:
        build_dir = args.out / "build"
        exes = build(build_dir, args.programs, args.llvm, args.cuda)
        cells = run_all(args, exes, build_dir)
        if args.callcost:
            text = []
            nograph = {"nograph": Config("nograph", (("MGPU_CACHED_GRAPH", "0"),))}
            for runtime in ("cached", "stock", "nograph", "cached"):
                cmd = [str(exes["callcost"]), str(exes["blob:callcost"]), "4000"]
                proc = subprocess.run(cmd, env=runtime_env(runtime, nograph, None),
                                      capture_output=True, text=True, timeout=args.timeout)
                text.append(proc.stdout + proc.stderr)
            (args.out / "callcost.txt").write_text("\n".join(text))
            print("\n".join(text))
        md = ["# MLIR programs under each runtime, µs per iteration (medians)", "",
              f"rounds {args.rounds} x reps {args.reps}, interleaved; floor = the same kernels "
              "through the CUDA driver with module and streams made once.", "",
              table(cells, args.programs, args.llvm, extra), ""]
        if "async" in args.programs or "async_prealloc" in args.programs:
            md += [async_breakdown(cells, args.llvm), ""]
        md += [counters(cells), ""]
    problems = consistency(cells)
    if not args.extras_only:
        md += ["Results identical across runtimes and checked against the CPU: " +
               ("yes" if not problems else "NO"), ""] + [f"- {p}" for p in problems]
    extras = extra_plan(args)
    if extras:
        run_extras(extras, runtime_env("cached", {}, None), 6 * args.timeout)
        text, failed = extras_markdown(extras)
        md += ["", "# Extras (issue 21): separate measurements, each side by side in itself", "",
               text]
        problems += failed
        md += [f"- {p}" for p in failed]
    (args.out / "results.md").write_text("\n".join(md) + "\n")
    (args.out / "results.json").write_text(json.dumps({
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
                 if k != "config"},
        "configs": {c.name: dict(c.env) for c in args.config},
        "cells": [{"program": p, "llvm": v, "runtime": rt,
                   "median_us": c.median if c.samples else None,
                   "samples_us": c.samples, "hashes": c.hashes, "checks": c.checks, **c.extra}
                  for (p, v, rt), c in cells.items()],
        "extras": extras_json(extras),
        "problems": problems}, indent=1))
    (args.out / "command.txt").write_text(
        "python3 " + " ".join(shlex.quote(a) for a in [sys.argv[0], *(argv or sys.argv[1:])]) +
        f"\n{platform.platform()} python {platform.python_version()}\n")
    if cells:
        note = plot(cells, args.out / "suite.png", args.programs, args.llvm,
                    list(BUILTIN_RUNTIMES) + extra)
        if note:
            print(note, file=sys.stderr)
    print("\n".join(md))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
