# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The conformance corpus: build, run and check the MLIR programs of tests/corpus/ (README.md).

Used by tests/test_corpus.py (CPU, recording fake driver), tests/gpu/test_corpus_gpu.py (GPU) and,
as a script, by the GPU run (gpu_run.sh):

    python3 tests/corpus/corpus.py --out DIR [--llvm 19 22] [--program NAME]... [--build-dir D]

builds every program for every LLVM version against the installed library, runs it in cached and
in stock mode (MGPU_CACHED_DISABLE=1) on the real driver, compares each run's output with
expected/<name>.txt and the two modes with each other, and writes DIR/corpus.md (the table) and
DIR/corpus.log (every run's output). Exit status 1 if any check failed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

HERE = Path(__file__).resolve().parent
PROGRAMS = sorted(p.stem for p in (HERE / "src").glob("*.mlir"))
LLVMS = (19, 22)
MODES = ("cached", "stock")

# Kernel launches each program makes (cuLaunchKernel + cuLaunchKernelEx + cuGraphLaunch: the
# graph launch path, issue 12), in both modes.
LAUNCHES = {"printf": 2, "reductions": 1, "subgroup_reduce": 1, "shuffle": 1,
            "memcpy_memset": 1, "host_register": 2, "two_modules": 9, "async_chain": 7,
            "concurrent": 3, "wmma": 2, "tma": 1, "cluster": 1, "assert_pass": 1,
            "assert_fail": 1}
# gpu.modules (fatbins) of each program: the driver loads each once in cached mode.
MODULES = {"two_modules": 2, "printf": 2}  # printf: its gpu.module and the outlined gpu.launch
# Further driver calls a program must make, exactly this often, in both modes (the feature's
# own entry point reached the driver).
CALLS: Dict[str, Dict[str, int]] = {
    "memcpy_memset": {"cuMemsetD32Async": 1, "cuMemsetD16Async": 1},
    "host_register": {"cuMemHostRegister": 2, "cuMemHostUnregister": 2},
    "tma": {"cuTensorMapEncodeTiled": 1},
    "cluster": {"cuLaunchKernelEx": 1, "cuLaunchKernel": 0},
    "async_chain": {"cuMemsetD32Async": 3, "cuStreamWaitEvent": 2},
    "concurrent": {"cuMemsetD32Async": 1, "cuStreamWaitEvent": 2},
    "assert_pass": {"cuMemsetD32Async": 1},
    "assert_fail": {"cuMemsetD32Async": 1},
}
COUNTED = sorted({"cuLaunchKernel", "cuLaunchKernelEx", "cuGraphLaunch", "cuLibraryLoadData", "cuModuleLoadData",
                  "cuModuleUnload", "cuLibraryUnload"} | {c for d in CALLS.values() for c in d})

# Programs whose every line comes from the device (gpu.printf): none without a GPU.
DEVICE_OUTPUT = {"printf"}
# The programs whose assert fires, and what the driver must say about it.
ASSERT_FIRES = {"assert_fail": ("block: [1,0,0], thread: [5,0,0]",
                                "Assertion `value is not the bad one` failed")}
_ASSERT_LINE = re.compile(r"Assertion `.*` failed")
_DONE = "runner: done"


def default_cc() -> Optional[str]:
    return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")


def obj(name: str, llvm: int) -> Path:
    return HERE / "obj" / f"{name}_llvm{llvm}.o"


def expected(name: str) -> List[str]:
    return (HERE / "expected" / f"{name}.txt").read_text().splitlines()


def build(name: str, llvm: int, out_dir: Path, ldflags: Sequence[str],
          cc: Optional[str] = None) -> Path:
    """Link runner.c with the program's object against the library (ldflags); raises
    CalledProcessError with the linker's message on an undefined symbol."""
    exe = out_dir / f"{name}_llvm{llvm}"
    subprocess.run([cc or default_cc(), "-std=c11", "-o", str(exe), str(HERE / "runner.c"),
                    str(obj(name, llvm)), *ldflags, "-ldl"],
                   check=True, capture_output=True, text=True)
    return exe


@dataclass
class Run:
    """One run of one program: its exit status and output, split into the program's own lines,
    the fake driver's counts, the driver's assertion messages, "info" lines (what a program
    observed that may legitimately differ between runs, e.g. whether two kernels overlapped) and
    the library's error lines."""
    rc: int
    stdout: str
    stderr: str
    lines: List[str] = field(default_factory=list)
    counts: Dict[str, int] = field(default_factory=dict)
    asserts: List[str] = field(default_factory=list)
    info: List[str] = field(default_factory=list)  # "info ..." lines: logged, never compared
    errors: List[str] = field(default_factory=list)
    done: bool = False

    @classmethod
    def parse(cls, rc: int, stdout: str, stderr: str) -> "Run":
        r = cls(rc, stdout, stderr)
        for line in stdout.splitlines():
            if line == _DONE:
                r.done = True
            elif line.startswith("count "):
                _, k, v = line.split()
                r.counts[k] = int(v)
            elif _ASSERT_LINE.search(line):
                r.asserts.append(line)
            elif line.startswith("info "):
                r.info.append(line)
            else:
                r.lines.append(line)
        for line in stderr.splitlines():
            (r.asserts if _ASSERT_LINE.search(line) else r.errors).append(line)
        return r


def run(exe: Path, mode: str, env: Optional[Dict[str, str]] = None, timeout: float = 120) -> Run:
    e = dict(os.environ if env is None else env)
    e.pop("MGPU_CACHED_DISABLE", None)
    if mode == "stock":
        e["MGPU_CACHED_DISABLE"] = "1"
    try:
        p = subprocess.run([str(exe)], env=e, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as t:
        out = t.stdout.decode() if isinstance(t.stdout, bytes) else (t.stdout or "")
        err = t.stderr.decode() if isinstance(t.stderr, bytes) else (t.stderr or "")
        return Run.parse(-9, out, err + f"\n[timed out after {timeout} s]")
    return Run.parse(p.returncode, p.stdout, p.stderr)


# The stock wrapper's own message when LLVM >= 21 code unloads its module in a global destructor
# after the driver has shut down (seen on the H100 for every LLVM 22 program in stock mode; the
# library in cached mode is silent there). Not a defect of the program or of the library.
STOCK_EXIT_UNLOAD = "'cuModuleUnload(module)' failed with '<unknown>'"


def check_expected(name: str, r: Run, mode: str = "cached") -> List[str]:
    """Problems of one GPU run against expected/<name>.txt (lines compared sorted). In stock mode
    the stock wrapper's unload-at-exit message (STOCK_EXIT_UNLOAD) is expected, not a problem."""
    problems = []
    if r.rc != 0:
        problems.append(f"exit status {r.rc}")
    if not r.done:
        problems.append("entry() did not return")
    want = sorted(expected(name))
    got = sorted(r.lines)
    if got != want:
        missing = [x for x in want if x not in got]
        extra = [x for x in got if x not in want]
        problems.append(f"output differs: missing {missing[:3]}, unexpected {extra[:3]}")
    if name in ASSERT_FIRES:
        where, what = ASSERT_FIRES[name]
        if not any(where in a and what in a for a in r.asserts):
            problems.append(f"no driver message '{where} ... {what}'")
        if not r.errors or "CUDA_ERROR_ASSERT" not in r.errors[0]:
            problems.append(f"first error line is not CUDA_ERROR_ASSERT: {r.errors[:1]}")
    else:
        if r.asserts:
            problems.append(f"assertion fired: {r.asserts[:2]}")
        err = [x for x in r.stderr.splitlines()
               if x.strip() and not (mode == "stock" and x.strip() == STOCK_EXIT_UNLOAD)]
        if err:
            problems.append(f"stderr not empty: {err[:3]}")
    return problems


def compare_modes(name: str, cached: Run, stock: Run) -> List[str]:
    """Problems where the cached run differs from the stock run of the same program."""
    problems = []
    if cached.rc != stock.rc:
        problems.append(f"exit status cached {cached.rc} != stock {stock.rc}")
    if sorted(cached.lines) != sorted(stock.lines):
        problems.append("program output differs between modes")
    if sorted(cached.asserts) != sorted(stock.asserts):
        problems.append(f"assertion messages differ: {cached.asserts[:2]} vs {stock.asserts[:2]}")
    if name in ASSERT_FIRES and cached.errors[:1] != stock.errors[:1]:
        problems.append(f"first error differs: {cached.errors[:1]} vs {stock.errors[:1]}")
    return problems


# ---- the GPU run as a script -------------------------------------------------------------------

def _ldflags() -> List[str]:
    import mgpu_cached
    return mgpu_cached.ldflags_list()


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--llvm", type=int, nargs="+", default=list(LLVMS))
    ap.add_argument("--program", action="append", choices=PROGRAMS)
    ap.add_argument("--driver", help="MGPU_CACHED_CUDA_DRIVER for the runs (a dry run on the "
                    "recording fake driver: no kernel runs, so the value checks fail)")
    ap.add_argument("--build-dir", type=Path, help="where the executables go (default: a new "
                    "temporary directory; not under --out, whose files are the logs)")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    build_dir = a.build_dir or Path(tempfile.mkdtemp(prefix="corpus-"))
    build_dir.mkdir(parents=True, exist_ok=True)
    ldflags = _ldflags()
    env = dict(os.environ)
    env.pop("MGPU_CACHED_CUDA_DRIVER", None)
    if a.driver:
        env["MGPU_CACHED_CUDA_DRIVER"] = a.driver
    rows, failed = [], 0
    with open(a.out / "corpus.log", "w") as log:
        for name in a.program or PROGRAMS:
            for llvm in a.llvm:
                try:
                    exe = build(name, llvm, build_dir, ldflags)
                except subprocess.CalledProcessError as e:
                    rows.append((name, llvm, "LINK FAILED", "", e.stderr.strip()[:200]))
                    log.write(f"=== {name} llvm{llvm}: link failed\n{e.stderr}\n")
                    failed += 1
                    continue
                runs = {m: run(exe, m, env, timeout=30) for m in MODES}
                status = {}
                for m, r in runs.items():
                    p = check_expected(name, r, m)
                    status[m] = "ok" if not p else "FAIL: " + "; ".join(p)
                    log.write(f"=== {name} llvm{llvm} {m}: rc={r.rc} {status[m]}\n"
                              f"--- stdout\n{r.stdout}--- stderr\n{r.stderr}\n")
                modes = compare_modes(name, runs["cached"], runs["stock"])
                same = "same" if not modes else "DIFFER: " + "; ".join(modes)
                info = [f"{m}: {' / '.join(r.info)}" for m, r in runs.items() if r.info]
                if info:  # logged only (e.g. whether two kernels overlapped)
                    same += " (" + "; ".join(info) + ")"
                log.write(f"=== {name} llvm{llvm}: modes {same}\n\n")
                log.flush()
                failed += sum(s != "ok" for s in status.values()) + bool(modes)
                rows.append((name, llvm, status["cached"], status["stock"], same))
                print(f"{name:16} llvm{llvm} cached: {status['cached'][:60]:20} "
                      f"stock: {status['stock'][:60]:20} modes: {same[:60]}", flush=True)
    with open(a.out / "corpus.md", "w") as md:
        md.write("| program | LLVM | cached | stock | cached vs stock |\n|---|---|---|---|---|\n")
        for row in rows:
            md.write("| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |\n")
        md.write(f"\n{failed} failed check(s)\n")
    print(f"{failed} failed check(s); table in {a.out / 'corpus.md'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
