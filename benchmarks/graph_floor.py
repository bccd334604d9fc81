# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The driver's own limits of the graph path, side by side with the floor (issue 12).

    python3 benchmarks/graph_floor.py --out DIR [--rounds 3] [--reps 3] [--n 20000]

Builds benchmarks/harness/floor.c and runs, interleaved (each round runs every variant once,
the order rotated per round), on the kernels of the committed LLVM 19 objects:

    empty           cuLaunchKernel + cuStreamSynchronize (the floor)
    empty_graph     a one-node graph exec made once: cuGraphLaunch + sync
    stencil         the Jacobi step, buffers swapped every launch: cuLaunchKernel + sync
    stencil_graph1  one exec, cuGraphExecKernelNodeSetParams (swapped buffers) + cuGraphLaunch + sync
    stencil_graph2  two execs made once, one per direction of the swap: cuGraphLaunch + sync

Writes DIR/graph_floor.md (µs per launch, medians, ratios to the floor) and graph_floor.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from run import cuda_link, extract_blob, result_line  # noqa: E402

VARIANTS = (("empty", "empty_loop"), ("empty_graph", "empty_loop"), ("stencil", "stencil"),
            ("stencil_graph1", "stencil"), ("stencil_graph2", "stencil"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--n", type=int, default=20000, help="launches per timed rep")
    ap.add_argument("--cuda", default=os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    exe = args.out / "floor"
    subprocess.run(["gcc", "-std=c11", "-D_GNU_SOURCE", "-O2", f"-I{args.cuda}/include", "-o",
                    str(exe), str(ROOT / "benchmarks/harness/floor.c"), *cuda_link(args.cuda),
                    "-lm"], check=True)
    blobs = {}
    for stem in {s for _, s in VARIANTS}:
        blobs[stem] = args.out / f"{stem}.fatbin"
        blobs[stem].write_bytes(extract_blob((ROOT / f"tests/data/mlir/{stem}_llvm19.o")
                                             .read_bytes()))
    samples = {v: [] for v, _ in VARIANTS}
    checks = {v: set() for v, _ in VARIANTS}
    names = [v for v, _ in VARIANTS]
    for rnd in range(args.rounds):
        order = names[rnd % len(names):] + names[:rnd % len(names)]
        for name in order:
            stem = dict(VARIANTS)[name]
            proc = subprocess.run([str(exe), name, str(blobs[stem]), str(args.n), str(args.reps),
                                   "1000"], capture_output=True, text=True, timeout=300)
            line = result_line(proc.stdout)
            if line is None:
                print(f"{name}: exit {proc.returncode}: {proc.stderr.strip()}", file=sys.stderr)
                checks[name].add(f"FAIL exit {proc.returncode}")
                continue
            res = json.loads(line)
            samples[name].extend(res["us"])
            checks[name].add(res["check"] if proc.returncode == 0 else "FAIL " + res["check"])
            print(f"round {rnd + 1} {name}: {statistics.median(res['us']):.2f} us", file=sys.stderr)
    med = {k: statistics.median(v) if v else float("nan") for k, v in samples.items()}
    base = {"empty": med["empty"], "empty_graph": med["empty"]}
    lines = ["# The driver's own graph limits: µs per synchronous launch (medians)", "",
             f"rounds {args.rounds} x reps {args.reps}, {args.n} launches per rep, interleaved",
             "", "| variant | µs | / its floor | check |", "| --- | --- | --- | --- |"]
    for name in names:
        floor = base.get(name, med["stencil"])
        lines.append(f"| {name} | {med[name]:.2f} | {med[name] / floor:.2f}× | "
                     f"{', '.join(sorted(checks[name]))} |")
    text = "\n".join(lines) + "\n"
    (args.out / "graph_floor.md").write_text(text)
    (args.out / "graph_floor.json").write_text(json.dumps({"samples_us": samples,
                                                           "checks": {k: sorted(v) for k, v in
                                                                      checks.items()}}, indent=1))
    print(text)
    return 1 if any(c.startswith("FAIL") for s in checks.values() for c in s) else 0


if __name__ == "__main__":
    sys.exit(main())
