# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The library's host work per iteration of the README's synchronous programs, counted (not timed)
against the recording fake driver under valgrind's callgrind: no GPU, the same number on every run
of the same build. Issue 21's fourth session found with it that the launch paths made 15-25
`__tls_get_addr` calls per iteration (docs/performance.md).

    python3 benchmarks/fake_instructions.py [--programs empty,stencil,large] [--llvm 19,22]
                                            [--n 400] [--lib DIR] [--fake LIBFAKECUDA] [--json]

--programs also takes async and async_prealloc (the allocating step and the step with buffers
made once; their counts include the allocator's reclaimer thread, which runs against the fake at
other times than against a GPU, so they vary by a few percent from run to run).

Builds benchmarks/harness/harness.c with each program's MLIR object (tests/data/mlir) against the
installed library (or --lib DIR's libmgpu_cached.so) and tests/drivers/fakecuda.c (or --fake),
runs each twice under callgrind, with N and 2N iterations after the same warm-up, and prints per
iteration (the difference of the two runs over N, so start-up and warm-up cancel):
    instructions          every instruction of the process (the fake driver's included)
    library instructions  those in libmgpu_cached.so's own functions (not in what they call)
    library tls calls     calls from the library's functions to __tls_get_addr
Needs valgrind and a C compiler; exits 2 without them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, Tuple

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = {"empty": ("PROG_EMPTY", "empty_loop"), "stencil": ("PROG_STENCIL", "stencil"),
            "large": ("PROG_LARGE", "large_module"), "async": ("PROG_ASYNC", "async_step"),
            "async_prealloc": ("PROG_ASYNC_PREALLOC", "async_step")}
WARMUP = 200  # graph and pool thresholds passed (MGPU_CACHED_GRAPH_FIRST_AFTER is 100)


def parse_callgrind(path: Path, lib: str = "libmgpu_cached") -> Tuple[int, int, int]:
    """(all instructions, instructions in functions of an object whose path holds `lib`, calls
    from those functions to __tls_get_addr) of one callgrind output file."""
    names: Dict[str, str] = {}
    objs: Dict[str, str] = {}

    def ref(table: Dict[str, str], text: str) -> str:
        m = re.match(r"\((\d+)\)(?:\s+(.*))?", text)
        if not m:
            return text
        if m.group(2):
            table[m.group(1)] = m.group(2)
        return table.get(m.group(1), "")

    total = mine = tls = 0
    ob = fn = cfn = ""
    after_calls = False
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("summary:"):
            total = int(line.split()[1])
        elif line.startswith("ob="):
            ob = ref(objs, line[3:])
        elif line.startswith("fn="):
            fn = ref(names, line[3:])
        elif line.startswith("cob="):
            ref(objs, line[4:])
        elif line.startswith("cfn="):
            cfn = ref(names, line[4:])
        elif line.startswith("calls="):
            if lib in ob and cfn == "__tls_get_addr":
                tls += int(line[6:].split()[0])
            after_calls = True
        elif line[:1].isdigit() or line[:1] in "+-*":
            parts = line.split()
            if after_calls:  # the inclusive cost of the call just named: not this function's own
                after_calls = False
            elif lib in ob and len(parts) >= 2:
                mine += int(parts[1])
    return total, mine, tls


def build(prog: str, llvm: int, libdir: str, out: Path) -> Path:
    macro, stem = PROGRAMS[prog]
    exe = out / f"{prog}{llvm}"
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-std=c11", "-D_GNU_SOURCE", "-O2", f"-D{macro}", "-o", str(exe),
                    str(ROOT / "benchmarks/harness/harness.c"),
                    str(ROOT / "tests/data/mlir" / f"{stem}_llvm{llvm}.o"), f"-L{libdir}",
                    "-lmgpu_cached", f"-Wl,-rpath,{libdir}", "-lm"], check=True)
    return exe


def count(exe: Path, n: int, fake: str, work: Path) -> Tuple[int, int, int]:
    out = work / f"cg.{exe.name}.{n}"
    env = dict(os.environ, MGPU_CACHED_BACKEND="cuda", MGPU_CACHED_CUDA_DRIVER=fake)
    env.pop("MGPU_CACHED_DISABLE", None)
    # the harness's check of the results fails against the fake (it runs no kernel): its exit
    # status is not asked, the count is
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", str(exe),
                    str(n), "1", str(WARMUP)], env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    if not out.exists():
        raise RuntimeError(f"callgrind wrote nothing for {exe.name} {n}")
    return parse_callgrind(out)


def measure(programs, llvms, n: int, libdir: str, fake: str) -> Dict[str, Dict[str, float]]:
    res: Dict[str, Dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for prog in programs:
            for llvm in llvms:
                exe = build(prog, llvm, libdir, work)
                a, b = count(exe, n, fake, work), count(exe, 2 * n, fake, work)
                res[f"{prog} {llvm}"] = {
                    "instructions": (b[0] - a[0]) / n,
                    "library instructions": (b[1] - a[1]) / n,
                    "library tls calls": (b[2] - a[2]) / n,
                }
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", default="empty,stencil,large")
    ap.add_argument("--llvm", default="19,22")
    ap.add_argument("--n", type=int, default=400, help="iterations of the shorter run")
    ap.add_argument("--lib", help="a folder holding libmgpu_cached.so (default: the installed one)")
    ap.add_argument("--fake", help="a built libfakecuda.so (default: built here)")
    ap.add_argument("--json", action="store_true", help="print the numbers as one JSON object")
    a = ap.parse_args()
    if not shutil.which("valgrind") or not shutil.which(os.environ.get("CC", "cc")):
        print("fake_instructions: needs valgrind and a C compiler", file=sys.stderr)
        return 2
    libdir = a.lib
    if not libdir:
        import mgpu_cached
        libdir = str(mgpu_cached.libdir())
    with tempfile.TemporaryDirectory() as tmp:
        fake = a.fake
        if not fake:
            fake = str(Path(tmp) / "libfakecuda.so")
            subprocess.run([os.environ.get("CC", "cc"), "-std=c11", "-D_GNU_SOURCE", "-O1", "-fPIC",
                            "-shared", "-pthread", f"-I{ROOT / 'csrc'}",
                            f"-I{ROOT / 'tests/drivers'}", "-o", fake,
                            str(ROOT / "tests/drivers/fakecuda.c"), "-ldl"], check=True)
        res = measure(a.programs.split(","), [int(x) for x in a.llvm.split(",")], a.n, libdir,
                      fake)
    if a.json:
        print(json.dumps(res, sort_keys=True))
        return 0
    print("per iteration, against the fake driver (callgrind)")
    print(f"{'program':<12} {'instructions':>13} {'library':>9} {'tls calls':>10}")
    for key, v in res.items():
        print(f"{key:<12} {v['instructions']:>13.0f} {v['library instructions']:>9.0f} "
              f"{v['library tls calls']:>10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
