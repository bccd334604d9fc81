# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Tables of a chain_split_probe run (benchmarks/runs/h100_session_n115.sh): per K, library and
mode, the median over rounds of the launches part, the synchronisation part and the whole chain
against the hand-made graph of the same round (cu_graphK), for every round and for the rounds
whose host was fastest and slowest (split at the median of the probe's throughput calibration,
calib_thr_ns: runs N113-N114 found the host on one of two levels, changing with time); and each
library's launches part against the first library's, per round; and the heap shape's chain
against the executable shape's plus the K comparisons of the blob that the heap shape's cache hits
make (the probe's compare_us: the verification's own cost on that host), per round.

    python3 benchmarks/chain_split_table.py RAW

RAW lines: "ROUND LIBRARY JSON" (the probe's line; cu_graphK under any library name)."""

from __future__ import annotations

import collections
import json
import statistics
import sys
from typing import Dict, List, Tuple


def load(path: str) -> Dict[Tuple[int, int], Dict[Tuple[str, str], dict]]:
    rounds: Dict[Tuple[int, int], Dict[Tuple[str, str], dict]] = collections.defaultdict(dict)
    for line in open(path):
        if not line.strip():
            continue
        r, lib, js = line.split(" ", 2)
        x = json.loads(js)
        if x["mode"] == "cu_graphK":
            lib = "-"
        rounds[(int(r), x["k"])][(lib, x["mode"])] = x
    return rounds


def table(rounds: Dict[Tuple[int, int], Dict[Tuple[str, str], dict]]) -> List[str]:
    out = ["| K | library | mode | launches µs | sync µs | chain / graph, all rounds | fast host | slow host |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    libs: List[str] = []
    for cells in rounds.values():
        for lib, _ in cells:
            if lib != "-" and lib not in libs:
                libs.append(lib)
    for k in sorted({k for _, k in rounds}):
        rs = [cells for (r, kk), cells in sorted(rounds.items()) if kk == k and ("-", "cu_graphK") in cells]
        for lib in libs:
            for mode in ("mgpu", "mgpu19exe", "mgpu19"):
                rows = [(c[(lib, mode)], c[("-", "cu_graphK")]) for c in rs if (lib, mode) in c]
                if not rows:
                    continue
                thr = statistics.median(min(x["calib_thr_ns"]) for x, _ in rows)
                ratio = lambda sel: statistics.median(x["total_us"] / g["total_us"] for x, g in sel) if sel else float("nan")
                fast = [(x, g) for x, g in rows if min(x["calib_thr_ns"]) <= thr]
                slow = [(x, g) for x, g in rows if min(x["calib_thr_ns"]) > thr]
                out.append(f"| {k} | {lib} | {mode} | {statistics.median(x['launch_us'] for x, _ in rows):.2f} "
                           f"| {statistics.median(x['sync_us'] for x, _ in rows):.2f} | {ratio(rows):.3f}× "
                           f"| {ratio(fast):.3f}× ({len(fast)}) | {ratio(slow):.3f}× ({len(slow)}) |")
    out.append("")
    if len(libs) > 1:
        out.append(f"launches part against {libs[0]}'s, per round (median):")
        for k in sorted({k for _, k in rounds}):
            for lib in libs[1:]:
                for mode in ("mgpu", "mgpu19exe", "mgpu19"):
                    v = [c[(lib, mode)]["launch_us"] / c[(libs[0], mode)]["launch_us"]
                         for (r, kk), c in rounds.items() if kk == k and (lib, mode) in c and (libs[0], mode) in c]
                    if v:
                        out.append(f"  K={k} {mode}: {lib} / {libs[0]} {statistics.median(v):.3f}× ({len(v)} rounds)")
    bound = []
    for k in sorted({k for _, k in rounds}):
        for lib in libs:
            v = [c[(lib, "mgpu19")]["total_us"] / (c[(lib, "mgpu19exe")]["total_us"] + c[(lib, "mgpu19")]["compare_us"])
                 for (r, kk), c in rounds.items()
                 if kk == k and (lib, "mgpu19") in c and (lib, "mgpu19exe") in c and "compare_us" in c[(lib, "mgpu19")]]
            if v:
                cmp_us = statistics.median(c[(lib, "mgpu19")]["compare_us"] for (r, kk), c in rounds.items()
                                           if kk == k and (lib, "mgpu19") in c and "compare_us" in c[(lib, "mgpu19")])
                bound.append(f"  K={k} {lib}: {statistics.median(v):.3f}× ({len(v)} rounds; K comparisons "
                             f"{cmp_us:.2f} µs)")
    if bound:
        out.append("")
        out.append("heap shape / (executable shape + the heap shape's K blob comparisons, compare_us), "
                   "per round (median):")
        out += bound
    return out


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    print("\n".join(table(load(sys.argv[1]))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
