# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Chains of K launches on one stream, then one sync (issue 12), side by side in one run.

    python3 benchmarks/chains.py --out DIR [--k 1,10,100] [--llvm 22,19,19ro,19exe] [--rounds 3] [--reps 5]

Builds benchmarks/harness/chain.c against the installed library and the CUDA driver, extracts the
empty kernel from tests/data/mlir/empty_loop_llvm22.o, and runs, interleaved (every round runs
every (K, variant) once, order rotated per round):

    stream floor    K cuLaunchKernel + cuStreamSynchronize
    graph1 floor    K x (cuGraphExecKernelNodeSetParams + cuGraphLaunch) of one one-node exec + sync
    graphK floor    one K-node graph made once by hand, cuGraphLaunch + sync (the driver's limit)
    today           K mgpuLaunchKernel + mgpuStreamSynchronize, MGPU_CACHED_GRAPH=0
    graph           the same, MGPU_CACHED_GRAPH=1 (the default: the program without chain replay)
    chain           the same, MGPU_CACHED_GRAPH=1 MGPU_CACHED_CHAIN=1 (opt-in chain replay)

The mgpu* variants run in the shape of each LLVM version of --llvm: 22, the module loaded once
(LLVM >= 21 code); 19, every launch wrapped in mgpuModuleLoad / mgpuModuleGetFunction /
mgpuModuleUnload as LLVM <= 20 code makes it (issue 21 item 2; rows "K / 19"), the blob read into
the heap (each cache hit compares it); 19ro, the same with the blob in a shared object's .rodata
(made here with `.incbin`; no comparison while no object is unloaded, which each hit asks the
loader); 19exe, the blob in the executable's own .rodata, where a program linked from MLIR's AOT
object has it (never unloaded: a hit neither compares nor asks the loader). Chain replay needs
the library's tagged stream handles (MGPU_CACHED_STREAM_HANDLES=tagged: with the default driver
handles it defers nothing, as the program may use the driver stream behind the library's back),
so today, graph and chain run with tagged handles, for a like-for-like comparison; "default" is
the program with no switch at all (driver handles, graph path on), what chain replay must never
lose to.
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

TAGGED = {"MGPU_CACHED_STREAM_HANDLES": "tagged"}
VARIANTS = {  # name -> (mode, extra environment)
    "stream floor": ("cu_stream", {}),
    "graph1 floor": ("cu_graph1", {}),
    "graphK floor": ("cu_graphK", {}),
    "today": ("mgpu", {"MGPU_CACHED_GRAPH": "0", **TAGGED}),
    "graph": ("mgpu", {"MGPU_CACHED_GRAPH": "1", **TAGGED}),
    "chain": ("mgpu", {"MGPU_CACHED_GRAPH": "1", "MGPU_CACHED_CHAIN": "1", **TAGGED}),
    "default": ("mgpu", {}),  # no switch at all (driver handles): what a program gets unasked
}
FLOORS = ("stream floor", "graph1 floor", "graphK floor")  # no runtime: one row serves both shapes


def rodata_asm(blob: Path, out: Path) -> Path:
    """An assembler file `out` whose .rodata holds the bytes of `blob` between the symbols
    chain_blob_start and chain_blob_end (gcc's assembler, `.incbin`)."""
    out.write_text('\t.section .rodata\n\t.balign 16\n\t.globl chain_blob_start\n'
                   f'chain_blob_start:\n\t.incbin "{blob.resolve()}"\n'
                   '\t.globl chain_blob_end\nchain_blob_end:\n'
                   '\t.section .note.GNU-stack,"",@progbits\n')
    return out


def rodata_object(blob: Path, out: Path) -> Path:
    """A shared object `out` whose .rodata holds the bytes of `blob` between the symbols
    chain_blob_start and chain_blob_end: a loaded object's read-only data, which the module cache
    does not compare on a hit while no object was unloaded since (19ro)."""
    subprocess.run(["gcc", "-shared", "-o", str(out), str(rodata_asm(blob, out.with_suffix(".S")))],
                   check=True)
    return out


def main() -> int:
    import mgpu_cached

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--k", default="1,10,100")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--launches", type=int, default=20000, help="launches per timed rep")
    ap.add_argument("--llvm", default="22,19",
                    help="shapes of the mgpu* variants: 22, 19 and/or 19ro")
    ap.add_argument("--cuda", default=os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    args = ap.parse_args()
    ks = [int(k) for k in args.k.split(",")]
    shapes = [v.strip() for v in args.llvm.split(",")]
    if not set(shapes) <= {"22", "19", "19ro", "19exe"}:
        ap.error("--llvm: 22, 19, 19ro and/or 19exe")
    args.out.mkdir(parents=True, exist_ok=True)
    blob = args.out / "empty.fatbin"
    blob.write_bytes(extract_blob((ROOT / "tests/data/mlir/empty_loop_llvm22.o").read_bytes()))
    exe = args.out / "chain"  # the blob linked in too, for the 19exe shape
    subprocess.run(["gcc", "-std=c11", "-D_GNU_SOURCE", "-O2", f"-I{ROOT / 'benchmarks/harness'}",
                    f"-I{args.cuda}/include", "-o", str(exe),
                    str(ROOT / "benchmarks/harness/chain.c"),
                    str(rodata_asm(blob, args.out / "chainblob_exe.S")),
                    *mgpu_cached.ldflags_list(), *cuda_link(args.cuda), "-lm"], check=True)
    ro = args.out / "libchainblob.so"  # the blob in .rodata, for the 19ro shape
    if "19ro" in shapes:
        rodata_object(blob, ro)
    base = {k: v for k, v in os.environ.items()
            if not k.startswith("MGPU_CACHED_") or k == "MGPU_CACHED_CUDA_DRIVER"}
    names = list(VARIANTS)
    # (K, shape, variant); the floors once per K (shape 0)
    cells = [(k, "-", n) for k in ks for n in FLOORS] + \
        [(k, v, n) for k in ks for v in shapes for n in names if n not in FLOORS]
    samples = {c: [] for c in cells}
    for rnd in range(args.rounds):
        for k in ks:
            mine = [c for c in cells if c[0] == k]
            order = mine[rnd % len(mine):] + mine[:rnd % len(mine)]
            for cell in order:
                _, v, name = cell
                mode, env = VARIANTS[name]
                if v in ("19", "19ro", "19exe"):
                    mode = "mgpu" + v
                chains = max(2, args.launches // k)
                proc = subprocess.run([str(exe), str(ro if v == "19ro" else blob), mode, str(k),
                                       str(chains),
                                       str(args.reps)], env={**base, **env}, capture_output=True,
                                      text=True, timeout=300)
                line = result_line(proc.stdout)
                if proc.returncode or line is None:
                    print(f"{name} K={k} LLVM {v}: exit {proc.returncode}: {proc.stderr}",
                          file=sys.stderr)
                    continue
                samples[cell] += json.loads(line)["us"]
                print(f"round {rnd + 1} K={k} LLVM {v} {name}: {line}", file=sys.stderr)
    med = {key: statistics.median(v) if v else float("nan") for key, v in samples.items()}
    rows = ["| K | LLVM shape | " + " | ".join(names) + " | graph/today | chain/today |"
            " chain/graphK floor | chain/default | graphK floor/stream floor |",
            "|" + " --- |" * (len(names) + 7)]
    for k in ks:
        for v in shapes:
            m = {n: med[(k, "-" if n in FLOORS else v, n)] for n in names}
            rows.append(f"| {k} | {v} | " + " | ".join(f"{m[n]:.2f}" for n in names) +
                        f" | {m['graph'] / m['today']:.2f}× | {m['chain'] / m['today']:.2f}× |"
                        f" {m['chain'] / m['graphK floor']:.2f}× |"
                        f" {m['chain'] / m['default']:.2f}× |"
                        f" {m['graphK floor'] / m['stream floor']:.2f}× |")
    md = ["# K launches of an empty kernel on one stream, then one sync: µs per chain (medians)",
          "", f"rounds {args.rounds} x reps {args.reps}, interleaved, ~{args.launches} launches "
          "per rep; LLVM shape 19: load / look-up / unload around every launch (19ro: the blob "
          "in a shared object's .rodata; 19exe: in the executable's, as in a program linked "
          "from MLIR's object)", ""] + rows
    (args.out / "chains.md").write_text("\n".join(md) + "\n")
    (args.out / "chains.json").write_text(json.dumps(
        {f"{k}:{v}:{n}": x for (k, v, n), x in samples.items()}, indent=1))
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
