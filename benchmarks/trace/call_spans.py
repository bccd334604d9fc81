# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""call_spans.py LABEL=TRACE.json ... - where one MLIR step's host time goes, side by side for
several traces of the same program (for instance the library now and the tree before an issue,
each run with MGPU_CACHED_TRACE): per mgpu* entry point, how many calls per step and the median
and mean duration of one call in µs, and the whole step (first to last span of the thread, per
step). `--by-counters` splits an entry point's rows by the counters each call changed. A step is the span of calls between two mgpuMemAlloc runs of `--first` (default: the
async step's first call, mgpuMemAlloc); the first `--skip` steps are left out (warm-up)."""

import argparse
import json
import statistics
from typing import Dict, List, Tuple


def load(path: str) -> List[dict]:
    d = json.load(open(path))
    ev = d["traceEvents"] if isinstance(d, dict) else d
    return sorted((e for e in ev if e.get("ph") == "X" and e.get("cat") == "mgpu"
                   and e.get("args", {}).get("depth", 0) == 0), key=lambda e: e["ts"])


def steps(ev: List[dict], first: str, per: int) -> List[List[dict]]:
    """Consecutive groups starting at every per-th call named `first`."""
    out: List[List[dict]] = []
    seen = 0
    for e in ev:
        if e.get("call", e["name"]) == first:
            if seen % per == 0:
                out.append([])
            seen += 1
        if out:
            out[-1].append(e)
    return out


def split(ev: List[dict], names: List[str]) -> None:
    """Name the spans of the entry points in `names` by the counters their call changed too
    (the trace's args.counters), e.g. "mgpuLaunchKernel [graph_launches, graph_updates]"."""
    for e in ev:
        if e["name"] in names:
            c = sorted(x for x in e.get("args", {}).get("counters", []) if x != "launches")
            e["call"] = e["name"]
            e["name"] = f"{e['name']} [{', '.join(c)}]"


def summary(ev: List[dict], first: str, per: int, skip: int) -> Tuple[Dict[str, Tuple[float, float, float]], Tuple[float, float], int]:
    st = steps(ev, first, per)[skip:-1]
    by: Dict[str, List[float]] = {}
    for s in st:
        for e in s:
            by.setdefault(e["name"], []).append(e["dur"])
    n = max(len(st), 1)
    rows = {k: (len(v) / n, statistics.median(v), statistics.fmean(v)) for k, v in by.items()}
    periods = [b[0]["ts"] - a[0]["ts"] for a, b in zip(st, st[1:])]
    mid = (statistics.median(periods), statistics.fmean(periods)) if periods else (0.0, 0.0)
    return rows, mid, len(st)


def rotation(ev: List[dict], first: str, per: int, skip: int) -> str:
    """How stable a step's launches are for the graph path, which keeps up to two argument sets
    per (driver stream, kernel) (graph_launch.h): per kernel, the share of launches on the same
    stream as that kernel's previous launch, and the share whose (stream, the step's allocated
    pointers) matched one of the last two seen for that (stream, kernel): an approximation of the
    launches that needed no node update (the pointers stand for the kernel's arguments)."""
    out = []
    same_stream: Dict[str, List[int]] = {}
    hit: Dict[str, List[int]] = {}
    last_stream: Dict[str, str] = {}
    sets: Dict[Tuple[str, str], List[Tuple[str, ...]]] = {}
    for s in steps(ev, first, per)[skip:-1]:
        ptrs = tuple(e["args"].get("ptr", "") for e in s if e.get("call", e["name"]) == first)
        for e in s:
            if e.get("call", e["name"]) != "mgpuLaunchKernel":
                continue
            k, st = e["args"].get("kernel", "?"), e["args"].get("stream", "?")
            same_stream.setdefault(k, []).append(last_stream.get(k) == st)
            last_stream[k] = st
            lst = sets.setdefault((st, k), [])
            hit.setdefault(k, []).append(ptrs in lst)
            if ptrs in lst:
                lst.remove(ptrs)
            lst.append(ptrs)
            del lst[:-2]
    trip = [tuple(e["args"].get("ptr", "") for e in s if e.get("call", e["name"]) == first)
            for s in steps(ev, first, per)[skip:-1]]
    for i in range(per):
        col = [t[i] if i < len(t) else "" for t in trip]
        rep = [col[j] in col[max(0, j - 2):j] for j in range(2, len(col))]
        out.append(f"allocation {i + 1}: same pointer as one of the 2 steps before "
                   f"{sum(rep) / max(len(rep), 1):.0%}, {len(set(col))} distinct")
    for k in sorted(same_stream):
        a, b = same_stream[k], hit[k]
        out.append(f"{k}: same stream as its previous launch {sum(a) / len(a):.0%}, "
                   f"(stream, pointers) among the last two {sum(b) / len(b):.0%}")
    return "; ".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="+", help="LABEL=TRACE.json")
    ap.add_argument("--first", default="mgpuMemAlloc")
    ap.add_argument("--per", type=int, default=3, help="calls of --first per step (3 for async)")
    ap.add_argument("--skip", type=int, default=20)
    ap.add_argument("--rotation", action="store_true",
                    help="also print how stable each kernel's stream and arguments are")
    ap.add_argument("--by-counters", default="",
                    help="comma list of entry points whose spans are split by counters changed")
    a = ap.parse_args()
    cols = []
    for t in a.traces:
        label, _, path = t.partition("=")
        ev = load(path)
        if a.rotation:
            print(f"{label}: {rotation(ev, a.first, a.per, a.skip)}")
        if a.by_counters:
            split(ev, a.by_counters.split(","))
        cols.append((label, *summary(ev, a.first, a.per, a.skip)))
    names = sorted({k for c in cols for k in c[1]})
    print("| mgpu call | " + " | ".join(f"{c[0]}: calls/step, median µs, mean µs" for c in cols) + " |")
    print("| --- |" + " --- |" * len(cols))
    for k in names:
        cells = []
        for c in cols:
            r = c[1].get(k)
            cells.append(f"{r[0]:.2f}, {r[1]:.2f}, {r[2]:.2f}" if r else "–")
        print(f"| {k} | " + " | ".join(cells) + " |")
    print("| step period (median, mean µs) | " + " | ".join(f"{c[2][0]:.2f}, {c[2][1]:.2f} ({c[3]} steps)" for c in cols) + " |")
    sums = []
    for c in cols:
        sums.append(f"{sum(r[0] * r[2] for r in c[1].values()):.2f}")
    print("| time inside mgpu calls per step (µs) | " + " | ".join(sums) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
