# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Paired ratios from benchmarks/run.py's results.json: for each program and LLVM version, the
ratio A / B of two runtimes round by round (each round's median of its reps; run.py runs the
runtimes of a round back to back, so a drift of the machine between rounds cancels), summarised
as the median over rounds with a bootstrap 90% interval (2,000 resamples of the rounds, seed 1),
and the ratio of the two runtimes' overall medians beside it.

    python3 benchmarks/paired.py RESULTS.json A B [A B ...]
    python3 benchmarks/paired.py --chains CHAINS.json [REPS]

e.g. `paired.py results.json cached before-391bd88` (issue 19's 3% rule). A runtime pair a cell
lacks is skipped. Prints one line per program, LLVM version and pair. With --chains, the same for
benchmarks/chains.py's chains.json (REPS: its --reps, default 3): per K and LLVM shape, chain
replay against the hand-made graph of the same round and against the same program without chain
replay, with the lowest and highest round.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
from pathlib import Path
from typing import Dict, List, Sequence, Tuple


def round_medians(samples: Sequence[float], reps: int) -> List[float]:
    """The median of each round's `reps` consecutive samples."""
    return [statistics.median(samples[i:i + reps]) for i in range(0, len(samples), reps)]


def paired(a: Sequence[float], b: Sequence[float], reps: int,
           resamples: int = 2000) -> Tuple[float, float, float, int]:
    """(median of the per-round ratios a/b, the 5th and 95th percentile of that median over
    bootstrap resamples of the rounds, the number of rounds)."""
    r = [x / y for x, y in zip(round_medians(a, reps), round_medians(b, reps))]
    rng = random.Random(1)
    boots = sorted(statistics.median(rng.choices(r, k=len(r))) for _ in range(resamples))
    return (statistics.median(r), boots[int(0.05 * resamples)], boots[int(0.95 * resamples) - 1],
            len(r))


def chains(data: Dict[str, List[float]], reps: int) -> List[str]:
    """chains.json ("K:shape:mode" -> samples, rounds x reps): the per-round lines."""
    out = []
    keys = sorted({tuple(k.split(":")[:2]) for k in data if k.endswith(":chain")},
                  key=lambda ks: (int(ks[0]), ks[1]))
    for k, shape in keys:
        chain = data[f"{k}:{shape}:chain"]
        for name, ref in (("hand-made graph", f"{k}:-:graphK floor"),
                          ("without chain replay", f"{k}:{shape}:default")):
            if ref not in data:
                continue
            med, lo, hi, n = paired(chain, data[ref], reps)
            r = [x / y for x, y in zip(round_medians(chain, reps), round_medians(data[ref], reps))]
            out.append(f"K={k} LLVM {shape} chain / {name}: {med:.3f}× per round (90% [{lo:.3f}, "
                       f"{hi:.3f}], {n} rounds; lowest {min(r):.3f}×, highest {max(r):.3f}×)")
    return out


def main(argv: Sequence[str]) -> int:
    if argv[:1] == ["--chains"] and len(argv) in (2, 3):
        data = json.loads(Path(argv[1]).read_text())
        print("\n".join(chains(data, int(argv[2]) if len(argv) == 3 else 3)))
        return 0
    if len(argv) < 3 or len(argv) % 2 == 0:
        print(__doc__.split("\n\n")[1].strip(), file=sys.stderr)
        return 2
    data = json.loads(Path(argv[0]).read_text())
    reps = int(data["args"]["reps"])
    cells: Dict[Tuple[str, int, str], List[float]] = {
        (c["program"], c["llvm"], c["runtime"]): c["samples_us"] for c in data["cells"]}
    pairs = list(zip(argv[1::2], argv[2::2]))
    for prog in sorted({k[0] for k in cells}):
        for llvm in sorted({k[1] for k in cells}):
            for a, b in pairs:
                sa, sb = cells.get((prog, llvm, a)), cells.get((prog, llvm, b))
                if not sa or not sb:
                    continue
                med, lo, hi, n = paired(sa, sb, reps)
                overall = statistics.median(sa) / statistics.median(sb)
                print(f"{prog} LLVM {llvm} {a} / {b}: {med:.3f}× per round (90% [{lo:.3f}, "
                      f"{hi:.3f}], {n} rounds); ratio of medians {overall:.3f}×")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
