# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Medians of a run script's raw samples, as a markdown table: one line per sample,

    ROUND LLVM CONFIG VALUE

(benchmarks/runs/tree_checks.sh's alloc_loop_rounds writes them), one table row per LLVM version,
one column per configuration in the order they first appear, each cell the median over rounds.
With --ratio A B, one more column: the median over rounds of A / B within each round (a drift of
the machine between rounds moves both and cancels), with the lowest and highest round.

    python3 benchmarks/medians.py RAW.txt [UNIT] [--ratio A B]
"""

from __future__ import annotations

import statistics
import sys
from typing import Dict, List, Optional, Tuple


def medians(lines: List[str]) -> Tuple[List[str], List[str], Dict[Tuple[str, str], float], int]:
    """(LLVM versions, configurations, {(llvm, config): median}, rounds) of the sample lines; a
    line without four fields or with a value that is not a number (a failed run) is skipped."""
    samples: Dict[Tuple[str, str], List[float]] = {}
    llvms: List[str] = []
    names: List[str] = []
    rounds = set()
    for line in lines:
        parts = line.split()
        if len(parts) != 4:
            continue
        rnd, llvm, name, value = parts
        try:
            x = float(value)
        except ValueError:
            continue
        rounds.add(rnd)
        if llvm not in llvms:
            llvms.append(llvm)
        if name not in names:
            names.append(name)
        samples.setdefault((llvm, name), []).append(x)
    return llvms, names, {k: statistics.median(v) for k, v in samples.items()}, len(rounds)


def round_ratios(lines: List[str], a: str, b: str) -> Dict[str, List[float]]:
    """{LLVM: [a / b of each round that has both]} of the sample lines."""
    by: Dict[Tuple[str, str, str], float] = {}
    for line in lines:
        parts = line.split()
        if len(parts) != 4:
            continue
        try:
            by[(parts[0], parts[1], parts[2])] = float(parts[3])
        except ValueError:
            continue
    out: Dict[str, List[float]] = {}
    for (rnd, llvm, name), x in by.items():
        if name == a and (rnd, llvm, b) in by and by[(rnd, llvm, b)] > 0:
            out.setdefault(llvm, []).append(x / by[(rnd, llvm, b)])
    return out


def table(lines: List[str], unit: str = "µs per step", ratio: Optional[Tuple[str, str]] = None) -> str:
    llvms, names, med, rounds = medians(lines)
    rr = round_ratios(lines, *ratio) if ratio else {}
    extra = [f"{ratio[0]} / {ratio[1]} per round (lowest, highest)"] if ratio else []
    out = ["| LLVM | " + " | ".join(names + extra) + " |",
           "| --- |" + " --- |" * (len(names) + len(extra))]
    for v in llvms:
        cells = [f"{med[(v, n)]:.2f}" if (v, n) in med else "–" for n in names]
        if ratio:
            r = rr.get(v, [])
            cells.append(f"{statistics.median(r):.3f}× ({min(r):.3f}, {max(r):.3f})" if r else "–")
        out.append(f"| {v} | " + " | ".join(cells) + " |")
    out.append(f"\n{unit}, median of {rounds} interleaved rounds")
    return "\n".join(out)


if __name__ == "__main__":
    args = sys.argv[1:]
    pair = None
    if "--ratio" in args:
        i = args.index("--ratio")
        if len(args) < i + 3:
            sys.exit(__doc__)
        pair = (args[i + 1], args[i + 2])
        del args[i:i + 3]
    if len(args) not in (1, 2):
        sys.exit(__doc__)
    with open(args[0]) as f:
        print(table(f.read().splitlines(), *args[1:], ratio=pair))
