# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""overlap_steps.py TRACE.json - in a trace of the async step (benchmarks/mlir/async_step.mlir),
how often the two producers ran at the same time: the i-th produce_a and i-th produce_b GPU spans
are one step's pair; prints how many pairs overlap, on how many distinct stream tracks, and the
median overlap in µs."""

import json
import statistics
import sys


def main(path: str) -> int:
    ev = [e for e in json.load(open(path))["traceEvents"]
          if e.get("ph") == "X" and e.get("cat") == "gpu"]
    a = sorted((e for e in ev if e["name"] == "produce_a"), key=lambda e: e["ts"])
    b = sorted((e for e in ev if e["name"] == "produce_b"), key=lambda e: e["ts"])
    pairs = list(zip(a, b))
    if not pairs:
        print("no produce_a / produce_b GPU spans")
        return 1
    overlaps = [min(x["ts"] + x["dur"], y["ts"] + y["dur"]) - max(x["ts"], y["ts"])
                for x, y in pairs]
    same_track = sum(x["tid"] == y["tid"] for x, y in pairs)
    n = sum(o > 0 for o in overlaps)
    print(f"steps: {len(pairs)}; producers overlapping: {n} ({n / len(pairs):.0%}); "
          f"pairs on one stream track: {same_track}; stream tracks in the trace: "
          f"{len({e['tid'] for e in ev})}")
    print(f"overlap per step, µs: median {statistics.median(overlaps):.2f}, "
          f"min {min(overlaps):.2f}, max {max(overlaps):.2f}; producer length median "
          f"{statistics.median(e['dur'] for e in a + b):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
