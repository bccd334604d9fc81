"""Chains of K launches on one stream, then one sync (issue 12), side by side in one run.

    python3 benchmarks/chains.py --out DIR [--k 1,10,100] [--rounds 3] [--reps 5] [--chains N]

Builds benchmarks/harness/chain.c against the installed library and the CUDA driver, extracts the
empty kernel from tests/data/mlir/empty_loop_llvm22.o, and runs, interleaved (every round runs
every (K, variant) once, order rotated per round):

    stream floor    K cuLaunchKernel + cuStreamSynchronize
    graph1 floor    K x (cuGraphExecKernelNodeSetParams + cuGraphLaunch) of one one-node exec + sync
    graphK floor    one K-node graph made once by hand, cuGraphLaunch + sync (the driver's limit)
    today           K mgpuLaunchKernel + mgpuStreamSynchronize, MGPU_CACHED_GRAPH=0
    graph           the same, MGPU_CACHED_GRAPH=1
    chain           the same, MGPU_CACHED_GRAPH=1 MGPU_CACHED_CHAIN=1 (opt-in chain replay)

Writes DIR/chains.md (µs per chain, medians, and the issue's ratios) and DIR/chains.json.
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

VARIANTS = {  # name -> (mode, extra environment)
    "stream floor": ("cu_stream", {}),
    "graph1 floor": ("cu_graph1", {}),
    "graphK floor": ("cu_graphK", {}),
    "today": ("mgpu", {"MGPU_CACHED_GRAPH": "0"}),
    "graph": ("mgpu", {"MGPU_CACHED_GRAPH": "1"}),
    "chain": ("mgpu", {"MGPU_CACHED_GRAPH": "1", "MGPU_CACHED_CHAIN": "1"}),
}


def main() -> int:
    import mgpu_cached

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--k", default="1,10,100")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--launches", type=int, default=20000, help="launches per timed rep")
    ap.add_argument("--cuda", default=os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    args = ap.parse_args()
    ks = [int(k) for k in args.k.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    exe = args.out / "chain"
    subprocess.run(["gcc", "-std=c11", "-D_GNU_SOURCE", "-O2", f"-I{ROOT / 'benchmarks/harness'}",
                    f"-I{args.cuda}/include", "-o", str(exe),
                    str(ROOT / "benchmarks/harness/chain.c"), *mgpu_cached.ldflags_list(),
                    *cuda_link(args.cuda), "-lm"], check=True)
    blob = args.out / "empty.fatbin"
    blob.write_bytes(extract_blob((ROOT / "tests/data/mlir/empty_loop_llvm22.o").read_bytes()))
    base = {k: v for k, v in os.environ.items()
            if not k.startswith("MGPU_CACHED_") or k == "MGPU_CACHED_CUDA_DRIVER"}
    names = list(VARIANTS)
    samples = {(k, n): [] for k in ks for n in names}
    for rnd in range(args.rounds):
        for k in ks:
            order = names[rnd % len(names):] + names[:rnd % len(names)]
            for name in order:
                mode, env = VARIANTS[name]
                chains = max(2, args.launches // k)
                proc = subprocess.run([str(exe), str(blob), mode, str(k), str(chains),
                                       str(args.reps)], env={**base, **env}, capture_output=True,
                                      text=True, timeout=300)
                line = result_line(proc.stdout)
                if proc.returncode or line is None:
                    print(f"{name} K={k}: exit {proc.returncode}: {proc.stderr}", file=sys.stderr)
                    continue
                samples[(k, name)] += json.loads(line)["us"]
                print(f"round {rnd + 1} K={k} {name}: {line}", file=sys.stderr)
    med = {key: statistics.median(v) if v else float("nan") for key, v in samples.items()}
    rows = ["| K | " + " | ".join(names) + " | graph/today | chain/today | chain/graphK floor |"
            " graphK floor/stream floor |", "|" + " --- |" * (len(names) + 5)]
    for k in ks:
        m = {n: med[(k, n)] for n in names}
        rows.append(f"| {k} | " + " | ".join(f"{m[n]:.2f}" for n in names) +
                    f" | {m['graph'] / m['today']:.2f}× | {m['chain'] / m['today']:.2f}× |"
                    f" {m['chain'] / m['graphK floor']:.2f}× |"
                    f" {m['graphK floor'] / m['stream floor']:.2f}× |")
    md = ["# K launches of an empty kernel on one stream, then one sync: µs per chain (medians)",
          "", f"rounds {args.rounds} x reps {args.reps}, interleaved, ~{args.launches} launches "
          "per rep", ""] + rows
    (args.out / "chains.md").write_text("\n".join(md) + "\n")
    (args.out / "chains.json").write_text(json.dumps(
        {f"{k}:{n}": v for (k, n), v in samples.items()}, indent=1))
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
