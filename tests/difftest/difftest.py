# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""difftest.py - the differential tester: generated mgpu* programs, run with the stock behaviour
(MGPU_CACHED_DISABLE=1) and with the cached one, must read the same data and both finish.

    python3 tests/difftest/difftest.py --programs 10000 --seed 1 --profile stock --out DIR
    python3 tests/difftest/difftest.py --fake --devices 2 --programs 300 --out DIR   # CPU

It builds runner.c against the installed library (mgpu_cached.library_path(); --lib another),
generates the programs (generator.py; --save-programs writes them to DIR/programs.txt), runs the
runner once per mode (resuming after a program that
hung or crashed), and compares per program: finished in both, same digest, no error message from
the library. Each difference is minimised (delta debugging: a smaller program that the stock
behaviour still runs identically under several interleavings and the cached one still runs
differently) and written to DIR/differences.txt; counts go to stdout and DIR/summary.json.
With --fake the CUDA driver is tests/drivers/fakecuda.c in its executing mode (FAKECUDA_EXEC=1),
built here, with --devices devices; without it, the machine's libcuda.so.1.

--classes adds issue 19's classes (generator.py: modglobal, pressure, capture, threads, reset,
sticky) to the programs; a class the library and driver cannot run (`runner MODULE --caps`) is an
error. Programs with a reset or a sticky error compare, besides the digest, which operations
reported which CUDA errors (the runner marks each operation on stderr); the stock errors are
expected there. Messages the library prints at exit are not compared for them.
A reset program is compared with the stock run of the same program *without* the reset (the line
made a comment): the stock library never works again after a reset (its frozen context is not
retained again, every later call reports CUDA_ERROR_CONTEXT_IS_DESTROYED: review G7 on the H100),
while the library must work again on the new context (issue 19 item 5); the program names no
handle made before the reset after it, so without the reset stock computes what a working
library must.
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
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
from generator import CLASSES, FEATURES, PROFILES, SIZES, Checker, generate  # noqa: E402

MODULE = HERE / "kernels.fatbin"
CC = shutil.which("cc") or shutil.which("gcc")


@dataclass
class Result:
    """One program's outcome in one mode."""
    status: str  # done, hang, crash
    digest: str = ""
    errors: List[str] = field(default_factory=list)  # the library's messages on stderr
    # with line marks: (line, CUDA error name) of each message during an operation
    signature: List[Tuple[int, str]] = field(default_factory=list)


@dataclass
class Difference:
    seq: int
    kind: str  # digest, hang, crash, errors, stock-errors
    stock: Result
    cached: Result
    program: List[str]
    minimised: Optional[List[str]] = None
    note: str = ""


def library_path() -> Path:
    """The installed library (pip install .), else this checkout's build (build_runtime.py)."""
    try:
        import mgpu_cached
        return Path(mgpu_cached.library_path())
    except (ImportError, FileNotFoundError):
        sys.path.insert(0, str(ROOT / "src"))
        sys.modules.pop("mgpu_cached", None)
        import mgpu_cached
        return Path(mgpu_cached.library_path())


def build_runner(out_dir: Path, lib: Optional[Path] = None) -> Path:
    """Compile runner.c against the library; returns the executable."""
    lib = lib or library_path()
    exe = out_dir / "difftest_runner"
    subprocess.run([CC or "cc", "-std=c11", "-O1", "-g", "-pthread", "-o", str(exe),
                    str(HERE / "runner.c"), f"-I{ROOT / 'csrc' / 'include'}", f"-L{lib.parent}",
                    "-lmgpu_cached", f"-Wl,-rpath,{lib.parent}", "-ldl"], check=True)
    return exe


def build_fake(out_dir: Path) -> Path:
    """The fake CUDA driver (executing mode is switched on by FAKECUDA_EXEC=1)."""
    so = out_dir / "libfakecuda_exec.so"
    subprocess.run([CC or "cc", "-std=c11", "-D_GNU_SOURCE", "-O1", "-g", "-fPIC", "-shared",
                    "-pthread", "-o", str(so), str(ROOT / "tests" / "drivers" / "fakecuda.c"),
                    "-ldl"], check=True)
    return so


@dataclass
class Setup:
    """How to run the runner: executable, module, environment."""
    runner: Path
    module: Path = MODULE
    env: Dict[str, str] = field(default_factory=dict)
    timeout: int = 60  # seconds per program (the runner's own watchdog)
    batch: int = 500  # programs per runner process (the fake driver never frees its handles)

    @staticmethod
    def make(work: Path, fake: bool, devices: int, lib: Optional[Path] = None,
             module: Path = MODULE, timeout: int = 60) -> "Setup":
        work.mkdir(parents=True, exist_ok=True)
        env = {"MGPU_CACHED_BACKEND": "cuda"}
        if fake:
            env.update(MGPU_CACHED_CUDA_DRIVER=str(build_fake(work)), FAKECUDA_EXEC="1",
                       FAKECUDA_DEVICES=str(devices))
        return Setup(build_runner(work, lib), module, env, timeout)

    def caps(self) -> List[str]:
        """The classes this library and driver can run (the runner's --caps)."""
        env = dict(os.environ, **self.env, MGPU_CACHED_DISABLE="1")
        out = subprocess.run([str(self.runner), str(self.module), "--caps"], env=env,
                             capture_output=True, text=True, timeout=120).stdout
        for line in out.splitlines():
            if line.startswith("caps"):
                return line.split()[1:]
        return []

    def for_classes(self, classes: Sequence[str]) -> "Setup":
        """This setup with what the classes need from the runner (a memory limit, line marks)."""
        env = dict(self.env)
        if "pressure" in classes:
            env["DIFFTEST_PRESSURE"] = "1"
            # The default keeps freed memory while more than the headroom (25% of the device) is
            # free besides it, so another user asking for more than the rest can fail where stock
            # succeeds (README: where the default differs from stock). HEADROOM=100 is the
            # documented stock memory behaviour, which must give no difference.
            env["MGPU_CACHED_ALLOCATOR_HEADROOM"] = "100"
        if set(classes) & {"reset", "sticky"}:
            env["DIFFTEST_LINEMARK"] = "1"
        return Setup(self.runner, self.module, env, self.timeout, self.batch)


_SEQ = re.compile(r"^seq (\d+) (done|hang)(?: ([0-9a-f]+))?$")
_CUERR = re.compile(r"failed with '(\w+)'")


def _signature(lines: List[str]) -> Tuple[List[str], List[Tuple[int, str]]]:
    """A program's stderr lines with line marks: the messages (those after the program's end
    marked "[exit] ") and the (line, error name) of each message during an operation."""
    msgs, sig, line, after = [], set(), 0, False
    for x in lines:
        if x.startswith("@@line "):
            line = int(x.split()[1])
        elif x.startswith("@@end "):
            after = True
        else:
            msgs.append(("[exit] " if after else "") + x)
            m = _CUERR.search(x)
            if m and not after:
                sig.add((line, m.group(1)))
    return msgs, sorted(sig)


def run_mode(setup: Setup, programs: Sequence[List[str]], stock: bool, work: Path,
             seed: int = 1, extra_env: Optional[Dict[str, str]] = None) -> Dict[int, Result]:
    """Run the programs in one mode, at most setup.batch per runner process; every program gets
    a Result (the next process resumes after a program that hung or crashed)."""
    results: Dict[int, Result] = {}
    todo = [stock_view(p) for p in programs] if stock else list(programs)
    tag = "stock" if stock else "cached"
    while todo:
        path = work / f"programs_{tag}.txt"
        batch, later = todo[:setup.batch], todo[setup.batch:]
        path.write_text("".join(line + "\n" for p in batch for line in p))
        env = dict(os.environ)
        env.update(setup.env)
        env.update({"MGPU_CACHED_DISABLE": "1" if stock else "0", "DIFFTEST_SEED": str(seed),
                    "DIFFTEST_TIMEOUT": str(setup.timeout)})
        env.update(extra_env or {})
        try:
            proc = subprocess.run([str(setup.runner), str(setup.module), str(path)], env=env,
                                  capture_output=True, text=True, errors="replace",
                                  timeout=setup.timeout * 4 + 10 * len(batch))
            out, err = proc.stdout, proc.stderr
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            err = (e.stderr or b"").decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        errors: Dict[int, List[str]] = {}
        cur = None
        for line in err.splitlines():
            if line.startswith("@@seq "):
                cur = int(line.split()[1])
                errors.setdefault(cur, [])
            elif cur is not None and line.strip():
                errors[cur].append(line)
        seen = set()
        stopped = False
        for line in out.splitlines():
            m = _SEQ.match(line)
            if m:
                seq = int(m.group(1))
                seen.add(seq)
                msgs, sig = _signature(errors.get(seq, []))
                results[seq] = Result(m.group(2), m.group(3) or "", msgs, sig)
            stopped = line == "stop"  # the runner ended after a reset / sticky error: resume
        ids = [int(p[0].split()[1]) for p in batch]
        # the first program without a result crashed the runner (or the runner stopped there)
        rest = [p for p, i in zip(batch, ids) if i not in seen]
        if rest and not stopped:
            first = int(rest[0][0].split()[1])
            if first not in results:
                results[first] = Result("crash", "", _signature(errors.get(first, []))[0])
            rest = rest[1:]
        todo = rest + later
    return results


def stock_view(program: List[str]) -> List[str]:
    """The program the stock mode runs: a reset is a comment (see the module's docstring)."""
    if not any(line.startswith("reset ") for line in program):
        return program
    return ["# " + line if line.startswith("reset ") else line for line in program]


def faults(program: Sequence[str]) -> bool:
    """Whether the program resets a context or causes a sticky error (errors expected)."""
    return any(line.startswith(("reset ", "fault ")) for line in program)


def compare(stock: Result, cached: Result, fault: bool = False) -> Optional[str]:
    if fault:  # errors expected: which operation reported which error must match
        if stock.status != "done":
            return "stock-" + stock.status
        if cached.status != "done":
            return cached.status
        if cached.digest != stock.digest:
            return "digest"
        if cached.signature != stock.signature:
            return "errors"
        return None
    if stock.status != "done" or stock.errors:
        return "stock-" + (stock.status if stock.status != "done" else "errors")
    if cached.status != "done":
        return cached.status
    if cached.errors:
        return "errors"
    if cached.digest != stock.digest:
        return "digest"
    return None


def _ids(program: List[str], seq: int) -> List[str]:
    return [f"seq {seq}"] + program[1:]


def reproduces(setup: Setup, program: List[str], work: Path, seed: int,
               stock_seeds: int = 3, extra_env: Optional[Dict[str, str]] = None) -> bool:
    """Stock runs `program` alone identically under `stock_seeds` interleavings, and the cached
    mode differs from it (digest, hang, crash or errors)."""
    seq = int(program[0].split()[1])
    digests = set()
    for k in range(stock_seeds):
        r = run_mode(setup, [program], True, work, seed + 7919 * k, extra_env)[seq]
        if r.status != "done" or (r.errors and not faults(program)):
            return False
        digests.add((r.digest, tuple(r.signature)))
    if len(digests) != 1:
        return False
    c = run_mode(setup, [program], False, work, seed, extra_env)[seq]
    if faults(program):
        return compare(r, c, True) is not None
    digests = {d for d, _ in digests}
    return compare(Result("done", digests.pop()), c) is not None


def minimise(setup: Setup, program: List[str], work: Path, seed: int, checker: Checker,
             budget_s: float = 120.0,
             extra_env: Optional[Dict[str, str]] = None) -> Optional[List[str]]:
    """ddmin over the operation lines, keeping programs that still keep the generator's rules
    with the same features (checker); None if the program does not reproduce alone."""
    if not reproduces(setup, program, work, seed, extra_env=extra_env):
        return None
    head, body, tail = program[:1], program[1:-1], program[-1:]
    deadline = time.monotonic() + budget_s
    n = 2
    while len(body) >= 2 and time.monotonic() < deadline:
        chunk = max(1, len(body) // n)
        reduced = False
        for i in range(0, len(body), chunk):
            cand = body[:i] + body[i + chunk:]
            if time.monotonic() >= deadline:
                break
            if cand and checker.check(head + cand + tail) is None and \
                    reproduces(setup, head + cand + tail, work, seed, extra_env=extra_env):
                body, n, reduced = cand, max(n - 1, 2), True
                break
        if not reduced:
            if chunk == 1:
                break
            n = min(n * 2, len(body))
    return head + body + tail


def run(programs: Sequence[List[str]], setup: Setup, work: Path, checker: Checker, seed: int = 1,
        minimise_limit: int = 3, minimise_budget_s: float = 120.0,
        extra_env: Optional[Dict[str, str]] = None) -> Tuple[List[Difference], Dict]:
    """Both modes over `programs`; the differences (the first `minimise_limit` minimised)."""
    t0 = time.monotonic()
    stock = run_mode(setup, programs, True, work, seed, extra_env)
    t1 = time.monotonic()
    cached = run_mode(setup, programs, False, work, seed, extra_env)
    t2 = time.monotonic()
    diffs = []
    for p in programs:
        seq = int(p[0].split()[1])
        kind = compare(stock[seq], cached[seq], faults(p))
        if kind:
            diffs.append(Difference(seq, kind, stock[seq], cached[seq], p))
    for d in diffs[:minimise_limit]:
        d.minimised = minimise(setup, d.program, work, seed, checker, minimise_budget_s, extra_env)
        if d.minimised is None:
            d.note = "does not reproduce when run alone (depends on the programs before it)"
    finished = sum(1 for p in programs
                   if stock[int(p[0].split()[1])].status == "done"
                   and cached[int(p[0].split()[1])].status == "done")
    summary = {"programs": len(programs), "differences": len(diffs), "both_finished": finished,
               "kinds": {k: sum(1 for d in diffs if d.kind == k) for k in sorted({d.kind for d in diffs})},
               "stock_s": round(t1 - t0, 2), "cached_s": round(t2 - t1, 2),
               "reads": sum(1 for p in programs for line in p if line.startswith(("read ", "hread ")))}
    return diffs, summary


CASES = HERE / "cases"


def load_case(path: Path) -> Tuple[Dict[str, str], List[str]]:
    """A regression case: '# key: value' lines (features, known), then one program."""
    meta: Dict[str, str] = {}
    program: List[str] = []
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            key, _, value = line[1:].partition(":")
            if key.strip() in ("features", "known", "classes"):
                meta[key.strip()] = value.strip()
        elif line.strip():
            program.append(line.strip())
    return meta, program


def case_differences(setup: Setup, program: List[str], work: Path, seeds: Sequence[int],
                     extra_env: Optional[Dict[str, str]] = None) -> List[str]:
    """Run one program alone under each seed in both modes; what differed, per seed."""
    seq = int(program[0].split()[1])
    out = []
    for seed in seeds:
        st = run_mode(setup, [program], True, work, seed, extra_env)[seq]
        ca = run_mode(setup, [program], False, work, seed, extra_env)[seq]
        kind = compare(st, ca, faults(program))
        if kind:
            out.append(f"seed {seed}: {kind} (stock {st.status} {st.digest}, cached {ca.status} "
                       f"{ca.digest}) {' '.join(st.errors + ca.errors)[:300]}")
    return out


def format_differences(diffs: Sequence[Difference]) -> str:
    out = []
    for d in diffs:
        out.append(f"== program {d.seq}: {d.kind}  stock={d.stock.status} {d.stock.digest} "
                   f"cached={d.cached.status} {d.cached.digest}")
        for e in (d.stock.errors[:5] + d.cached.errors[:5]):
            out.append(f"   message: {e}")
        if d.stock.signature != d.cached.signature:
            out.append(f"   errors by line: stock {d.stock.signature[:12]} cached "
                       f"{d.cached.signature[:12]}")
        if d.note:
            out.append(f"   note: {d.note}")
        if d.minimised:
            out.append(f"   minimised ({len(d.minimised) - 2} of {len(d.program) - 2} operations):")
            out.extend("     " + line for line in d.minimised)
        else:
            out.extend("     " + line for line in d.program)
    return "\n".join(out) + ("\n" if out else "")


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--first", type=int, default=0, help="number of the first program")
    ap.add_argument("--profile", choices=sorted(PROFILES), default="stock")
    ap.add_argument("--allow", default=None,
                    help=f"comma-separated features instead of the profile's ({', '.join(FEATURES)})")
    ap.add_argument("--devices", type=int, default=1)
    ap.add_argument("--classes", default="",
                    help=f"comma-separated classes of issue 19 ({', '.join(CLASSES)})")
    ap.add_argument("--max-ops", type=int, default=50)
    ap.add_argument("--spins", default="0,20,200,1000",
                    help="microseconds the slow kernel waits on the GPU, chosen at random")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)),
                    help="buffer sizes in 32-bit words, chosen at random")
    ap.add_argument("--fake", action="store_true", help="use the executing fake CUDA driver")
    ap.add_argument("--timeout", type=int, default=60, help="seconds per program")
    ap.add_argument("--minimise", type=int, default=3, help="differences to minimise")
    ap.add_argument("--minimise-budget", type=float, default=120.0, help="seconds per difference")
    ap.add_argument("--plant", default=None, help="a planted defect (drop_wait) for a self-check")
    ap.add_argument("--lib", type=Path, default=None,
                    help="libmgpu_cached.so to test (default: the installed one)")
    ap.add_argument("--dump-stock", type=Path, default=None,
                    help="only run the stock mode with DIFFTEST_DUMP=1 and write the runner's output "
                         "(digests, which words each read found zero) to this file")
    ap.add_argument("--save-programs", action="store_true",
                    help="write every program to OUT/programs.txt (they follow from the seed)")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    allow = PROFILES[a.profile] if a.allow is None else [x for x in a.allow.split(",") if x]
    a.out.mkdir(parents=True, exist_ok=True)
    spins = [int(x) for x in a.spins.split(",")]
    sizes = [int(x) for x in a.sizes.split(",")]
    classes = [x for x in a.classes.split(",") if x]
    programs = generate(a.seed, a.programs, a.devices, allow, spins, a.max_ops, a.first, sizes,
                        classes)
    if a.save_programs:
        (a.out / "programs.txt").write_text("".join(line + "\n" for p in programs for line in p))
    extra = {"DIFFTEST_PLANT": a.plant} if a.plant else None
    with tempfile.TemporaryDirectory(prefix="difftest") as tmp:
        work = Path(tmp)
        setup = Setup.make(work, a.fake, a.devices, lib=a.lib, timeout=a.timeout)
        missing = sorted(set(classes) - set(setup.caps()))
        if missing:
            print(f"difftest: this library and driver cannot run the classes {missing}",
                  file=sys.stderr)
            return 2
        setup = setup.for_classes(classes)
        if a.dump_stock:
            path = work / "programs.txt"
            path.write_text("".join(line + "\n" for p in programs for line in p))
            env = dict(os.environ, **setup.env, MGPU_CACHED_DISABLE="1", DIFFTEST_DUMP="1",
                       DIFFTEST_SEED=str(a.seed), DIFFTEST_TIMEOUT=str(a.timeout))
            out = subprocess.run([str(setup.runner), str(setup.module), str(path)], env=env,
                                 capture_output=True, text=True, errors="replace").stdout
            a.dump_stock.write_text(out)
            return 0
        diffs, summary = run(programs, setup, work, Checker(a.devices, allow, classes), a.seed,
                             a.minimise,
                             a.minimise_budget, extra)
    summary.update(library=str(a.lib or library_path()), seed=a.seed, sizes=sizes, first=a.first, features=sorted(allow), classes=classes, devices=a.devices,
                   fake=a.fake, plant=a.plant,
                   command="python3 tests/difftest/difftest.py " + " ".join(argv or sys.argv[1:]))
    (a.out / "differences.txt").write_text(format_differences(diffs))
    (a.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary))
    if diffs:
        print(format_differences(diffs[:5]), end="")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
