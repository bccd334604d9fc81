# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The table of chain_pair_probe.c's lines (issue 21 item 2): per K and tree, the median [min, max]
over processes of each shape's ratio to the hand-made graph (the shapes every line has), the heap shape against the
executable shape plus its comparisons of the blob, and the graph's and the comparisons' times;
where the lines have them, a second table of each call's time in a link (exe and heap shapes),
the synchronisations, and (lines with "ratio_same", run N153 on) each shape against the graph on
the same driver stream.

    python3 benchmarks/chain_pair_table.py RAW

RAW holds one line per process: a tree label, a space, the probe's JSON line (as
benchmarks/runs/h100_session_n139.sh writes them). Lines that do not parse are reported.
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

SHAPES = ("22", "exe", "heap", "exe+memcmp", "exe+same", "graph+same")  # exe+memcmp, exe+same:
# runs from N142 on; graph+same from N149 on
HEAD = {"22": "LLVM 22"}
CALLS = ("load", "get", "launch", "unload", "first_load", "first_get", "first_launch",
         "first_unload", "sync")  # the last five: runs from N145 on
SYNCS = ("22", "22x", "exe_held")


def spread(v: list) -> str:
    """A cell: the median [min, max] of v."""
    return f"{statistics.median(v):.3f} [{min(v):.3f}, {max(v):.3f}]"


def table(lines: list[str]) -> str:
    rows: dict = {}
    out = []
    for line in lines:
        tree, _, js = line.strip().partition(" ")
        try:
            r = json.loads(js)
        except ValueError:
            out.append(f"unparsed: {line.strip()}")
            continue
        rows.setdefault((r["k"], tree), []).append(r)
    shapes = [s for s in SHAPES if rows and all(s in x["ratio"] for rs in rows.values() for x in rs)]
    bound = "graph+same" in shapes  # the heap shape against the graph plus its comparisons
    cols = [HEAD.get(s, s) for s in shapes] + ["heap / (exe + compare)"] + \
        (["heap / (graph+same)"] if bound else []) + ["graph µs", "compare µs"]
    out += ["| K | tree | processes | " + " | ".join(cols) + " |",
            "| --- | --- | --- | " + " | ".join("---" for _ in cols) + " |"]
    for (k, tree), rs in sorted(rows.items()):
        cells = [spread([x["ratio"][s] for x in rs]) for s in shapes]
        hc = statistics.median(x["us"]["heap"] / (x["us"]["exe"] + x["compare_us"]) for x in rs)
        graph = statistics.median(x["graph_us"] for x in rs)
        compare = statistics.median(x["compare_us"] for x in rs)
        if bound:
            hb = statistics.median(x["ratio"]["heap"] / x["ratio"]["graph+same"] for x in rs)
            cells.append(f"{hc:.3f} | {hb:.3f}")
        else:
            cells.append(f"{hc:.3f}")
        out.append(f"| {k} | {tree} | {len(rs)} | " + " | ".join(cells) +
                   f" | {graph:.2f} | {compare:.2f} |")
    calls = [(key, rs) for key, rs in sorted(rows.items()) if all("calls_ns" in x for x in rs)]
    if calls:  # where a link's time goes (runs from N144 on): per call, exe and heap
        out += ["", "| K | tree | call | exe ns | heap ns | heap - exe |", "| --- | --- | --- | --- | --- | --- |"]
        for (k, tree), rs in calls:
            for call in [c for c in CALLS if all(c in x["calls_ns"]["exe"] for x in rs)]:
                e = statistics.median(x["calls_ns"]["exe"][call] for x in rs)
                h = statistics.median(x["calls_ns"]["heap"][call] for x in rs)
                out.append(f"| {k} | {tree} | {call} | {e:.1f} | {h:.1f} | {h - e:+.1f} |")
    syncs = [(key, rs) for key, rs in sorted(rows.items()) if all("sync_ns" in x for x in rs)]
    if syncs:  # the synchronisation of other kernels and of the exe shape held (runs from N146 on)
        out += ["", "| K | tree | sync of | ns | - exe's |", "| --- | --- | --- | --- | --- |"]
        for (k, tree), rs in syncs:
            e = statistics.median(x["calls_ns"]["exe"]["sync"] for x in rs)
            for what in SYNCS:
                v = statistics.median(x["sync_ns"][what] for x in rs)
                out.append(f"| {k} | {tree} | {what} | {v:.1f} | {v - e:+.1f} |")
    per_stream = [(key, rs) for key, rs in sorted(rows.items())
                  if all("stream_sync_ns" in x for x in rs)]
    if per_stream:  # the LLVM 22 shape's synchronisation on each stream (runs from N147 on)
        out += ["", "| K | tree | LLVM 22 shape's sync on each stream, ns (median over processes) |",
                "| --- | --- | --- |"]
        for (k, tree), rs in per_stream:
            n = min(len(x["stream_sync_ns"]) for x in rs)
            v = [statistics.median(x["stream_sync_ns"][i] for x in rs) for i in range(n)]
            out.append(f"| {k} | {tree} | " + " / ".join(f"{x:.0f}" for x in v) + " |")
    same = [(key, rs) for key, rs in sorted(rows.items()) if all("ratio_same" in x for x in rs)]
    if same:  # each shape against the graph on the driver stream its chains ran on (N153 on)
        cols = [HEAD.get(s, s) for s in shapes] + ["heap / (graph+same)", "graph on 8 streams µs"]
        out += ["", "Same driver stream: each shape's block / the hand-made graph's block on the "
                "stream its chains were replayed on",
                "", "| K | tree | processes | " + " | ".join(cols) + " |",
                "| --- | --- | --- | " + " | ".join("---" for _ in cols) + " |"]
        for (k, tree), rs in same:
            cells = [spread([x["ratio_same"][s] for x in rs]) for s in shapes]
            hb = statistics.median(x["ratio_same"]["heap"] / x["ratio_same"]["graph+same"]
                                   for x in rs) if bound else None
            cells.append(f"{hb:.3f}" if hb is not None else "")
            sg = [statistics.median(x["stream_graph_us"][i] for x in rs)
                  for i in range(min(len(x["stream_graph_us"]) for x in rs))]
            cells.append(f"{min(sg):.2f}-{max(sg):.2f}" if sg else "")
            out.append(f"| {k} | {tree} | {len(rs)} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main() -> None:
    print(table(Path(sys.argv[1]).read_text().splitlines()))


if __name__ == "__main__":
    main()
