# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Do kernels on two async chains overlap? Side by side in one run (issue 4), with the MLIR 19 and
22 programs of tests/data/conc/ under mgpu-cached and under the stock behaviour
(MGPU_CACHED_DISABLE=1):

* spin: two kernels that each wait for the other to start (bounded by --limit polls; a kernel
  that reaches the limit timed out: the two did not run at the same time);
* long: wall time of two long kernels on two chains over one such kernel (median of --reps):
  1.0 means full overlap, 2.0 none.

    python3 benchmarks/conc/overlap.py [--limit 2097152] [--steps 20000000] [--reps 3]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

import mgpu_cached

DATA = Path(__file__).resolve().parent.parent.parent / "tests" / "data" / "conc"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=1 << 21)
    ap.add_argument("--steps", type=int, default=20_000_000)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        for llvm in (19, 22):
            exe = Path(d) / f"conc{llvm}"
            subprocess.run(["cc", "-std=c11", "-O2", "-o", str(exe), str(DATA / "conc_harness.c"),
                            str(DATA / f"conc_llvm{llvm}.o"), *mgpu_cached.ldflags_list(),
                            "-ldl"], check=True)
            for disable in (False, True):
                env = dict(os.environ)
                env.pop("MGPU_CACHED_DISABLE", None)
                if disable:
                    env["MGPU_CACHED_DISABLE"] = "1"
                label = f"LLVM {llvm} {'stock ' if disable else 'cached'}"
                t0 = time.perf_counter()
                p = subprocess.run([str(exe), "spin", str(a.limit)], env=env, capture_output=True,
                                   text=True, timeout=300)
                dt = time.perf_counter() - t0
                polls = p.stdout.split()[1:3] if p.stdout.startswith("spin") else ["?", "?"]
                verdict = "overlap" if p.returncode == 0 else ("TIMED OUT (no overlap)"
                                                               if p.returncode == 3 else
                                                               f"exit {p.returncode}")
                print(f"{label} spin: polls {polls[0]} / {polls[1]} of {a.limit}: {verdict}, "
                      f"{dt:.2f} s; stderr lines: {len(p.stderr.splitlines())}", flush=True)
                p = subprocess.run([str(exe), "long", str(a.steps), str(a.reps)], env=env,
                                   capture_output=True, text=True, timeout=300)
                line = p.stdout.splitlines()[0] if p.stdout else f"exit {p.returncode}"
                print(f"{label} {line}", flush=True)


if __name__ == "__main__":
    main()
