# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""What allocating in the async step costs the driver itself (issue 21 item 3): the README's async
step with its three intermediate buffers allocated and freed every step, through the library,
beside the same step through the CUDA driver with the buffers made once and with them taken from
the driver's own stream-ordered allocator (cuMemAllocAsync / cuMemFreeAsync from the device's
default pool, and cuMemAllocFromPoolAsync from the default pool of managed memory, CUDA 13), each
pool keeping what is freed. One process per cell, cells interleaved, ROUNDS rounds; prints the
medians and, per round, the ratio of each allocating step to the same runtime's step with the
buffers made once (median over rounds, with the lowest and highest round).

    python3 benchmarks/alloc_floor.py [--rounds 10] [--reps 3] [--n 2000] [--llvm 22] [--json FILE]

The driver's pools give none of the library's guarantees (no wait for other streams' work before
a block is reused, no clearing): their ratio is what stream-ordered allocation costs at the least.
Needs a GPU, gcc and CUDA's cuda.h (--cuda or $CUDA_HOME).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run as suite  # noqa: E402  (benchmarks/run.py: the blob extraction and the builds' flags)

FLOORS = ("async_prealloc", "async_pool", "async_mpool")  # floor.c programs
LIBRARY = ("async_prealloc", "async")  # harness.c programs through the library


def build(work: Path, llvm: int, cuda: str) -> Tuple[Path, Path, Dict[str, Path]]:
    import mgpu_cached

    cflags = ["-std=c11", "-D_GNU_SOURCE", "-O2", f"-I{suite.HARNESS}"]
    obj = suite.OBJECTS / f"async_step_llvm{llvm}.o"
    blob = work / "async.fatbin"
    blob.write_bytes(suite.extract_blob(obj.read_bytes()))
    floor = work / "floor"
    subprocess.run(["gcc", *cflags, f"-I{cuda}/include", "-o", str(floor),
                    str(suite.HARNESS / "floor.c"), *suite.cuda_link(cuda), "-lm"], check=True)
    exes = {}
    for prog in LIBRARY:
        exe = work / prog
        subprocess.run(["gcc", *cflags, f"-D{suite.PROGRAMS[prog][1]}", "-o", str(exe),
                        str(suite.HARNESS / "harness.c"), str(obj),
                        *mgpu_cached.ldflags_list(), "-lm"], check=True)
        exes[prog] = exe
    return floor, blob, exes


def once(cmd: List[str]) -> float:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: rc {out.returncode}: {out.stderr.strip()[-300:]}")
    line = json.loads(out.stdout.strip().splitlines()[-1])
    if line.get("check") not in ("ok", "none"):
        raise RuntimeError(f"{' '.join(cmd)}: check {line.get('check')}")
    return float(line["median_us"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--n", type=int, default=2000, help="steps per timed repetition")
    ap.add_argument("--llvm", type=int, default=22)
    ap.add_argument("--cuda", default=os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    ap.add_argument("--json", type=Path, help="also write every round's medians here")
    a = ap.parse_args()
    counts = [str(a.n), str(a.reps), "200"]
    cells: Dict[str, List[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        floor, blob, exes = build(Path(tmp), a.llvm, a.cuda)
        runs = [(f"driver {p}", [str(floor), p, str(blob), *counts]) for p in FLOORS]
        runs += [(f"library {p}", [str(exes[p]), *counts]) for p in LIBRARY]
        for _ in range(a.rounds):
            for name, cmd in runs:
                try:
                    cells.setdefault(name, []).append(once(cmd))
                except RuntimeError as e:  # e.g. no managed pool on this driver: said, skipped
                    print(f"{name}: {e}", file=sys.stderr)
                    cells.setdefault(name, []).append(float("nan"))
    print(f"# The async step (LLVM {a.llvm}), µs per step, {a.rounds} rounds x {a.reps} reps\n")
    print("| runtime | buffers | median µs | allocating / made once (median of rounds) | lowest | highest |")
    print("| --- | --- | --- | --- | --- | --- |")
    pairs = [("driver", "driver async_prealloc", "driver async_prealloc"),
             ("driver", "driver async_pool", "driver async_prealloc"),
             ("driver", "driver async_mpool", "driver async_prealloc"),
             ("library", "library async_prealloc", "library async_prealloc"),
             ("library", "library async", "library async_prealloc")]
    for who, cell, ref in pairs:
        v = [x for x in cells.get(cell, []) if x == x]
        r = [x / y for x, y in zip(cells.get(cell, []), cells.get(ref, [])) if x == x and y == y]
        what = cell.split(" ", 1)[1]
        if not v or not r:
            print(f"| {who} | {what} | – | – | – | – |")
            continue
        print(f"| {who} | {what} | {statistics.median(v):.2f} | {statistics.median(r):.3f}× | "
              f"{min(r):.3f}× | {max(r):.3f}× |")
    if a.json:
        a.json.write_text(json.dumps(cells, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
