# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Medians of a run script's raw samples, as a markdown table: one line per sample,

    ROUND LLVM CONFIG VALUE

(benchmarks/runs/tree_checks.sh's alloc_loop_rounds writes them), one table row per LLVM version,
one column per configuration in the order they first appear, each cell the median over rounds.

    python3 benchmarks/medians.py RAW.txt [UNIT]
"""

from __future__ import annotations

import statistics
import sys
from typing import Dict, List, Tuple


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


def table(lines: List[str], unit: str = "µs per step") -> str:
    llvms, names, med, rounds = medians(lines)
    out = ["| LLVM | " + " | ".join(names) + " |", "| --- |" + " --- |" * len(names)]
    for v in llvms:
        out.append(f"| {v} | " + " | ".join(
            f"{med[(v, n)]:.2f}" if (v, n) in med else "–" for n in names) + " |")
    out.append(f"\n{unit}, median of {rounds} interleaved rounds")
    return "\n".join(out)


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        print(table(f.read().splitlines(), *sys.argv[2:]))
