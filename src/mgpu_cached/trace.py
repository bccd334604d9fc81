# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""``mgpu-cached trace`` and ``mgpu-cached report``: record a timeline, read it back.

    mgpu-cached trace -o FILE [--no-gpu] [--limit N] -- COMMAND ARGS
        run COMMAND with the library preloaded and MGPU_CACHED_TRACE set; FILE gets the Chrome
        trace-event JSON (open it in https://ui.perfetto.dev or chrome://tracing). When COMMAND
        starts several processes that use the library, each writes its own file: the one started
        directly (or the only one) FILE, the others FILE.<pid>.
    mgpu-cached report FILE... [--plot OUT.png] [--json]
        per-kernel table (launches, GPU time total / mean / p50 / p99, host time per launch, cache
        hits of the kernel lookups), per-call table (count, host time, cache and pool hits and
        misses the calls caused), GPU
        time per stream (busy time, and time with two or more streams busy); --plot draws a
        timeline of a few steps and the GPU time per kernel (matplotlib). Streams are named
        ``stream 1``, ``stream 2``, ... in the order their first GPU span starts (per process);
        the driver's stream pointer is only in the --json output. A file that is missing, not
        JSON or not a trace of the expected shape is one line naming it and what is wrong.

The library writes the file itself (``MGPU_CACHED_TRACE=FILE``, see the README); this module only
runs commands and reads files.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from ._paths import preload_env

LAUNCHES = ("mgpuLaunchKernel", "mgpuLaunchKernelCooperative", "mgpuLaunchClusterKernel")
# (counter meaning a hit, counter meaning a miss) of the caches and pools: a call's span lists the
# counters it moved (a stream is bound to a driver stream at its first use, so a launch or copy
# can hit or miss the stream pool)
HIT_COUNTERS = [("module_hits", "module_misses"), ("stream_pool_hits", "driver_stream_creates"),
                ("event_pool_hits", "driver_event_creates"), ("alloc_hits", "alloc_misses")]


# ---- mgpu-cached trace -------------------------------------------------------------------------

def run_traced(output: str, command: Sequence[str], gpu: bool = True,
               limit: Optional[int] = None) -> int:
    """Run `command` with the library preloaded and tracing on; returns its exit status."""
    with tempfile.TemporaryDirectory(prefix="mgpu-cached-trace-") as tmp:
        env = dict(os.environ)
        env.update(preload_env(env))
        env["MGPU_CACHED_TRACE"] = os.path.join(tmp, "trace.%p.json")
        if gpu:
            env["MGPU_CACHED_TRACE_GPU"] = "1"
        else:
            env.pop("MGPU_CACHED_TRACE_GPU", None)
        if limit is not None:
            env["MGPU_CACHED_TRACE_LIMIT"] = str(limit)
        try:
            proc = subprocess.Popen(list(command), env=env)
        except FileNotFoundError:
            raise _error(f"{command[0]}: command not found", 127) from None
        except OSError as e:
            raise _error(f"{command[0]}: cannot run: {e.strerror}", 126) from None
        code = proc.wait()
        code = 128 - code if code < 0 else code  # as a shell reports a signal
        if code != 0:
            print(f"mgpu-cached trace: command exited with status {code}", file=sys.stderr)
        files = {int(os.path.basename(p).split(".")[1]): p
                 for p in glob.glob(os.path.join(tmp, "trace.*.json"))
                 if os.path.basename(p).split(".")[1].isdigit()}
        if not files:
            print("mgpu-cached trace: no process wrote a trace (did the command use the "
                  "library's mgpu* functions?)", file=sys.stderr)
            return code if code else 1
        root = proc.pid if proc.pid in files else (next(iter(files)) if len(files) == 1 else None)
        written = []
        for pid, path in sorted(files.items()):
            dest = output if pid == root else f"{output}.{pid}"
            try:
                shutil.move(path, dest)
            except OSError as e:
                raise _error(f"trace: cannot write {dest}: {e.strerror}", 1) from None
            written.append(dest)
        for dest in written:
            print(f"mgpu-cached trace: wrote {dest}", file=sys.stderr)
    return code


# ---- reading a trace ---------------------------------------------------------------------------

class TraceError(ValueError):
    """A trace file that cannot be read: the message names the file and what is wrong."""


def _kind(value: object) -> str:
    return {type(None): "null", bool: "a boolean", int: "a number", float: "a number",
            str: "a string", list: "an array", dict: "an object"}.get(type(value), "a value")


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and \
        math.isfinite(value)


# what the readers below use of an event, and the type it must have where present
_FIELDS = {"name": str, "ph": str, "cat": str, "pid": int, "tid": int, "args": dict}
_ARGS = {"counters": list, "kernel": str, "depth": int}
_KIND_NAMES = {str: "a string", int: "an integer", dict: "an object", list: "an array"}


def _check_event(i: int, e: object) -> Optional[str]:
    """What is wrong with trace event number i (from 0), or None."""
    if not isinstance(e, dict):
        return f"event {i} is {_kind(e)}, not an object"
    label = f"event {i}" + (f" ({e['name']!r})" if isinstance(e.get("name"), str) else "")
    for key, kind in _FIELDS.items():
        v = e.get(key)
        if v is not None and not (isinstance(v, kind) and not isinstance(v, bool)):
            return f"{label}: \"{key}\" is {_kind(v)}, not {_KIND_NAMES[kind]}"
    args = e.get("args") or {}
    for key, kind in _ARGS.items():
        v = args.get(key)
        if v is not None and not (isinstance(v, kind) and not isinstance(v, bool)):
            return f"{label}: args \"{key}\" is {_kind(v)}, not {_KIND_NAMES[kind]}"
    if e.get("ph") == "X":  # a span: read for its start and length
        for key in ("ts", "dur"):
            if not _is_number(e.get(key)):
                return f"{label}: \"{key}\" is {_kind(e.get(key))}, not a number"
        if e["dur"] < 0:
            return f"{label}: \"dur\" is negative"
    if e.get("ph") == "M" and e.get("name") == "thread_name" and \
            not isinstance(args.get("name", ""), str):
        return f"{label}: args \"name\" is {_kind(args.get('name'))}"
    return None


def load(path: str) -> dict:
    """Read a Chrome trace-event file (object or array form) and check the fields the report
    reads; TraceError (one line naming the file) when it cannot be used."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise TraceError(f"{path}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise TraceError(f"{path}: not a trace (not UTF-8 text)") from None
    except json.JSONDecodeError as e:
        raise TraceError(f"{path}: not JSON ({e.msg} at line {e.lineno} column {e.colno})") \
            from None
    except (ValueError, RecursionError) as e:
        raise TraceError(f"{path}: not JSON ({e})") from None
    if isinstance(data, list):  # the array form of the format
        data = {"traceEvents": data}
    if not isinstance(data, dict):
        raise TraceError(f"{path}: not a trace (the file holds {_kind(data)}, not an object "
                         "with traceEvents)")
    if "traceEvents" not in data:
        raise TraceError(f"{path}: not a trace (no traceEvents)")
    if not isinstance(data["traceEvents"], list):
        raise TraceError(f"{path}: not a trace (traceEvents is {_kind(data['traceEvents'])}, "
                         "not an array)")
    if not isinstance(data.get("otherData", {}), dict):
        raise TraceError(f"{path}: otherData is {_kind(data['otherData'])}, not an object")
    for i, e in enumerate(data["traceEvents"]):
        wrong = _check_event(i, e)
        if wrong:
            raise TraceError(f"{path}: {wrong}")
    return data


# ---- the GPU streams: named by ordinal ---------------------------------------------------------

@dataclass
class Stream:
    """A GPU track of a trace: the spans of one driver stream of one process."""
    label: str  # "stream N" (N from 1, in the order the first span starts), "pid P stream N"
    pid: int
    order: Tuple[int, int]  # (the process's place, N): processes in the order of their first span
    device: object  # args.device of its spans (None when absent)
    driver_stream: object  # args.driver_stream (the driver's pointer; JSON output only)


def gpu_streams(traces: Sequence[dict]) -> Dict[Tuple[int, int], Stream]:
    """The GPU tracks, (pid, tid) -> Stream: numbered per process in the order their first span
    starts (ties: the order in the file), so the names do not depend on pointer values."""
    spans = [e for d in traces for e in d["traceEvents"]
             if e.get("ph") == "X" and e.get("cat") == "gpu"]
    spans.sort(key=lambda e: e["ts"])  # stable: file order among equal starts
    pids: List[int] = []
    streams: Dict[Tuple[int, int], Stream] = {}
    counts: Dict[int, int] = {}
    for e in spans:
        key = (e.get("pid", 0), e.get("tid", 0))
        if key in streams:
            continue
        pid = key[0]
        if pid not in counts:
            pids.append(pid)
        counts[pid] = counts.get(pid, 0) + 1
        args = e.get("args") or {}
        streams[key] = Stream(f"stream {counts[pid]}", pid, (pids.index(pid), counts[pid]),
                              args.get("device"), args.get("driver_stream"))
    if len(traces) > 1 or len(pids) > 1:
        for st in streams.values():
            st.label = f"pid {st.pid} {st.label}"
    return streams


def _pct(values: List[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    k = min(len(s) - 1, max(0, int(round(p / 100 * (len(s) - 1)))))
    return s[k]


def _union(intervals: Iterable[Tuple[float, float]]) -> float:
    total, end = 0.0, None
    start = None
    for a, b in sorted(intervals):
        if end is None or a > end:
            if end is not None:
                total += end - start
            start, end = a, b
        else:
            end = max(end, b)
    if end is not None:
        total += end - start
    return total


def _concurrent(per_stream: Dict[str, List[Tuple[float, float]]], k: int = 2) -> float:
    """Time during which at least k streams are busy."""
    points = []
    for spans in per_stream.values():
        # merge each stream's own spans first (a stream runs one thing at a time)
        merged: List[List[float]] = []
        for a, b in sorted(spans):
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        for a, b in merged:
            points += [(a, 1), (b, -1)]
    points.sort(key=lambda p: (p[0], p[1]))
    busy, last, total = 0, None, 0.0
    for t, d in points:
        if last is not None and busy >= k:
            total += t - last
        busy += d
        last = t
    return total


@dataclass
class Kernel:
    launches: int = 0
    host_us: List[float] = field(default_factory=list)
    gpu_us: List[float] = field(default_factory=list)
    lookups: int = 0
    lookup_hits: int = 0


@dataclass
class Call:
    count: int = 0
    host_us: List[float] = field(default_factory=list)
    hits: int = 0
    misses: int = 0
    errors: int = 0


@dataclass
class Summary:
    kernels: Dict[str, Kernel]
    calls: Dict[str, Call]
    streams: Dict[str, dict]
    concurrent_us: float
    gpu_window_us: float
    other: dict
    files: List[str]


def summarize(traces: Sequence[dict], files: Sequence[str] = ()) -> Summary:
    """The tables of the report, from traces checked by :func:`load`."""
    kernels: Dict[str, Kernel] = {}
    calls: Dict[str, Call] = {}
    gpu = gpu_streams(traces)
    per_stream: Dict[Tuple[int, int], List[Tuple[float, float]]] = {}
    other: dict = {}
    for data in traces:
        for k, v in data.get("otherData", {}).items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "pid":
                other[k] = other.get(k, 0) + v
            else:
                other.setdefault(k, v)
        for e in data["traceEvents"]:
            if e.get("ph") != "X":
                continue
            args = e.get("args") or {}
            dur = float(e["dur"])
            if e.get("cat") == "gpu":
                track = (e.get("pid", 0), e.get("tid", 0))
                per_stream.setdefault(track, []).append((float(e["ts"]), float(e["ts"]) + dur))
                if "launch" in args:
                    kernels.setdefault(e.get("name", "?"), Kernel()).gpu_us.append(dur)
                continue
            name = e.get("name", "?")
            c = calls.setdefault(name, Call())
            c.count += 1
            c.host_us.append(dur)
            counters = args.get("counters") or []
            if "errors" in counters:
                c.errors += 1
            for hit, miss in HIT_COUNTERS:
                c.hits += hit in counters
                c.misses += miss in counters
            kname = args.get("kernel") or (f"function {args['function']}"
                                           if name in LAUNCHES and "function" in args else None)
            if name in LAUNCHES and kname:
                k = kernels.setdefault(kname, Kernel())
                k.launches += 1
                k.host_us.append(dur)
            elif name == "mgpuModuleGetFunction" and kname:
                k = kernels.setdefault(kname, Kernel())
                k.lookups += 1
                if "function_lookups" in counters and "function_resolves" not in counters \
                        and "errors" not in counters:
                    k.lookup_hits += 1
    streams = {}
    all_spans = [s for spans in per_stream.values() for s in spans]
    window = (max(b for _, b in all_spans) - min(a for a, _ in all_spans)) if all_spans else 0.0
    for track in sorted(per_stream, key=lambda t: gpu[t].order):
        spans, st = per_stream[track], gpu[track]
        streams[st.label] = {"spans": len(spans), "busy_us": _union(spans),
                             "first_us": min(a for a, _ in spans),
                             "last_us": max(b for _, b in spans), "pid": st.pid,
                             "device": st.device, "driver_stream": st.driver_stream}
    return Summary(kernels, calls, streams, _concurrent(per_stream), window, other, list(files))


def _f(x: float) -> str:
    return "–" if x != x else f"{x:.2f}"


def format_report(s: Summary) -> str:
    o = s.other
    lines = []
    head = ", ".join(s.files) if s.files else "trace"
    lines.append(f"{head}: mode {o.get('mode', '?')}, backend {o.get('backend', '?')}, "
                 f"GPU spans {'on' if o.get('gpu_spans') else 'off'}, "
                 f"{o.get('records', '?')} records")
    if o.get("dropped_records") or o.get("dropped_gpu_spans"):
        lines.append(f"  dropped: {o.get('dropped_records', 0)} records (limit "
                     f"{o.get('limit', '?')}), {o.get('dropped_gpu_spans', 0)} GPU spans")
    lines.append("")
    lines.append("Kernels (µs)")
    hdr = ["kernel", "launches", "GPU total", "GPU mean", "GPU p50", "GPU p99",
           "host/launch", "lookup hits"]
    rows = []
    for name, k in sorted(s.kernels.items(), key=lambda kv: -sum(kv[1].gpu_us)):
        g = k.gpu_us
        rows.append([name, str(k.launches), _f(sum(g)) if g else "–",
                     _f(sum(g) / len(g)) if g else "–", _f(_pct(g, 50)), _f(_pct(g, 99)),
                     _f(sum(k.host_us) / len(k.host_us)) if k.host_us else "–",
                     f"{k.lookup_hits}/{k.lookups}" if k.lookups else "–"])
    lines += _table(hdr, rows)
    lines.append("")
    lines.append("mgpu* calls (host µs)")
    hdr = ["call", "count", "total", "mean", "p50", "p99", "hits/misses", "errors"]
    rows = []
    for name, c in sorted(s.calls.items(), key=lambda kv: -sum(kv[1].host_us)):
        h = c.host_us
        rows.append([name, str(c.count), _f(sum(h)), _f(sum(h) / len(h)), _f(_pct(h, 50)),
                     _f(_pct(h, 99)),
                     f"{c.hits}/{c.misses}" if c.hits or c.misses else "–", str(c.errors)])
    lines += _table(hdr, rows)
    if s.streams:
        lines.append("")
        lines.append(f"GPU streams (µs; window {_f(s.gpu_window_us)} from the first to the last "
                     f"GPU span)")
        hdr = ["stream", "GPU", "spans", "busy", "busy share"]
        rows = [[t, "–" if v["device"] is None else str(v["device"]), str(v["spans"]),
                 _f(v["busy_us"]),
                 f"{v['busy_us'] / s.gpu_window_us:.0%}" if s.gpu_window_us else "–"]
                for t, v in s.streams.items()]
        lines += _table(hdr, rows)
        lines.append(f"time with two or more streams busy: {_f(s.concurrent_us)} µs")
    return "\n".join(lines)


def _table(hdr: List[str], rows: List[List[str]]) -> List[str]:
    widths = [max(len(hdr[i]), *(len(r[i]) for r in rows)) if rows else len(hdr[i])
              for i in range(len(hdr))]
    fmt = lambda r: "  ".join((c.ljust(w) if i == 0 else c.rjust(w))  # noqa: E731
                              for i, (c, w) in enumerate(zip(r, widths)))
    return [fmt(hdr), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows]


def as_json(s: Summary) -> dict:
    return {
        "files": s.files, "other": s.other,
        "kernels": {n: {"launches": k.launches, "gpu_total_us": sum(k.gpu_us),
                        "gpu_spans": len(k.gpu_us),
                        "gpu_mean_us": sum(k.gpu_us) / len(k.gpu_us) if k.gpu_us else None,
                        "gpu_p50_us": _pct(k.gpu_us, 50) if k.gpu_us else None,
                        "gpu_p99_us": _pct(k.gpu_us, 99) if k.gpu_us else None,
                        "host_per_launch_us": (sum(k.host_us) / len(k.host_us)
                                               if k.host_us else None),
                        "lookups": k.lookups, "lookup_hits": k.lookup_hits}
                    for n, k in s.kernels.items()},
        "calls": {n: {"count": c.count, "host_total_us": sum(c.host_us),
                      "host_p50_us": _pct(c.host_us, 50), "hits": c.hits, "misses": c.misses,
                      "errors": c.errors} for n, c in s.calls.items()},
        "streams": s.streams, "concurrent_us": s.concurrent_us,
        "gpu_window_us": s.gpu_window_us,
    }


# ---- plot --------------------------------------------------------------------------------------

def plot(traces: Sequence[dict], s: Summary, out: str, window: Optional[Tuple[float, float]] = None
         ) -> Optional[str]:
    """Timeline of a short window (host threads and GPU streams) above the GPU time per kernel.
    Returns a note instead of drawing when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: no plot (pip install matplotlib, or the plot extra)"
    events = [e for d in traces for e in d["traceEvents"] if e.get("ph") == "X"]
    names: Dict[Tuple[int, int], str] = {}  # host threads: the trace's names; streams: ordinals
    for d in traces:
        for e in d["traceEvents"]:
            if e.get("ph") == "M" and e.get("name") == "thread_name":
                names[(e.get("pid", 0), e.get("tid", 0))] = (e.get("args") or {}).get("name", "")
    names.update((key, st.label) for key, st in gpu_streams(traces).items())
    gpu = sorted((e for e in events if e.get("cat") == "gpu"), key=lambda e: e["ts"])
    if window is None:
        # the last few steps: the window holding the last 12 GPU spans (or 40 host calls)
        tail = gpu[-12:] if gpu else sorted(events, key=lambda e: e["ts"])[-40:]
        if tail:
            t0 = min(e["ts"] for e in tail)
            t1 = max(e["ts"] + e.get("dur", 0) for e in tail)
            pad = (t1 - t0) * 0.03 + 1
            window = (t0 - pad, t1 + pad)
        else:
            window = (0.0, 1.0)
    lo, hi = window
    shown = [e for e in events if e["ts"] < hi and e["ts"] + e.get("dur", 0) > lo]
    tracks = sorted({(e.get("pid", 0), e.get("tid", 0), e.get("cat") == "gpu") for e in shown},
                    key=lambda t: (t[2], t[0], t[1]))
    fig, (ax, bx) = plt.subplots(2, 1, figsize=(11, 3 + 0.45 * len(tracks) + 2.5),
                                 gridspec_kw={"height_ratios": [max(2, len(tracks)), 3]})
    kernel_palette, call_palette = plt.get_cmap("tab10"), plt.get_cmap("Pastel2")
    colours: Dict[str, object] = {}
    calls: Dict[str, object] = {}

    def colour(name: str, host: bool = False):
        table, pal, n = (calls, call_palette, 8) if host else (colours, kernel_palette, 10)
        if name not in table:
            table[name] = pal(len(table) % n)
        return table[name]

    for row, (pid, tid, is_gpu) in enumerate(tracks):
        for e in shown:
            if (e.get("pid", 0), e.get("tid", 0)) != (pid, tid):
                continue
            a = max(e["ts"], lo) - lo
            w = min(e["ts"] + e.get("dur", 0), hi) - lo - a
            depth = (e.get("args") or {}).get("depth", 0) if not is_gpu else 0
            ax.broken_barh([(a, max(w, (hi - lo) * 0.001))], (row - 0.4 + 0.1 * depth,
                                                             0.8 - 0.2 * depth),
                           facecolors=colour(e.get("name", "?"), host=not is_gpu),
                           edgecolor="black",
                           linewidth=0.3)
            if w > (hi - lo) * 0.06:
                label = e.get("name", "?").replace("mgpu", "")
                ax.text(a + w / 2, row, label, ha="center", va="center", fontsize=6,
                        clip_on=True)
    ax.set_yticks(range(len(tracks)))
    ax.set_yticklabels([names.get((p, t), f"{'GPU' if g else 'thread'} {t}")
                        for p, t, g in tracks], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, hi - lo)
    ax.set_xlabel("µs", fontsize=8)
    ax.set_title(f"timeline ({hi - lo:.0f} µs): host calls above, GPU streams below",
                 fontsize=9)
    from matplotlib.patches import Patch
    handles = [Patch(facecolor=c, edgecolor="black", label=n) for n, c in colours.items()]
    handles += [Patch(facecolor=c, edgecolor="black", label=n.replace("mgpu", ""))
                for n, c in calls.items()]
    ax.legend(handles=handles, fontsize=6, loc="upper left", bbox_to_anchor=(1.005, 1.0),
              frameon=False)
    ks = sorted(((n, k) for n, k in s.kernels.items() if k.gpu_us or k.host_us),
                key=lambda nk: -(sum(nk[1].gpu_us) or 0))
    labels = [n for n, _ in ks]
    y = range(len(ks))
    gpu_mean = [sum(k.gpu_us) / len(k.gpu_us) if k.gpu_us else 0 for _, k in ks]
    host_mean = [sum(k.host_us) / len(k.host_us) if k.host_us else 0 for _, k in ks]
    bx.barh([i - 0.2 for i in y], gpu_mean, height=0.4, label="GPU time per launch (mean)",
            color=[colour(n) for n in labels])
    bx.barh([i + 0.2 for i in y], host_mean, height=0.4, label="host time per launch (mean)",
            color="lightgray", edgecolor="gray")
    bx.set_yticks(list(y))
    bx.set_yticklabels([f"{n} ×{k.launches}" for n, k in ks], fontsize=7)
    bx.invert_yaxis()
    bx.set_xlabel("µs", fontsize=8)
    bx.legend(fontsize=7, loc="lower right")
    bx.set_title("per kernel", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    return None


# ---- the subcommands (registered in cli.SUBCOMMANDS) ------------------------------------------

def add_trace(sub) -> None:
    p = sub.add_parser("trace", help="run a command with a timeline trace (Chrome trace JSON)",
                       description="Run COMMAND with the library preloaded and tracing on: FILE "
                       "gets a timeline of every mgpu* call and, unless --no-gpu, of the GPU work "
                       "(Chrome trace-event JSON, for https://ui.perfetto.dev or 'mgpu-cached "
                       "report'). Every other process of COMMAND that uses the library writes "
                       "FILE.<pid>. Exits with COMMAND's status.")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="trace file to write")
    p.add_argument("--no-gpu", action="store_true",
                   help="host spans only (no timing events on the GPU)")
    p.add_argument("--limit", type=int, help="records kept (MGPU_CACHED_TRACE_LIMIT)")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- COMMAND ARGS",
                   help="the command to run")
    p.set_defaults(run=_run_trace)


def add_report(sub) -> None:
    r = sub.add_parser("report", help="tables (and a plot) from trace files",
                       description="Read traces written by 'mgpu-cached trace' (or "
                       "MGPU_CACHED_TRACE) and print per-kernel, per-call and per-stream tables; "
                       "several files (the processes of one run) are summed. Streams are named "
                       "'stream 1', 'stream 2', ... in the order they first ran; --json adds the "
                       "driver's stream pointer.")
    r.add_argument("files", nargs="+", metavar="FILE", help="trace JSON files")
    r.add_argument("--plot", metavar="OUT.png", help="draw a timeline and per-kernel bars")
    r.add_argument("--window", metavar="START:END",
                   help="timeline window in µs of the trace clock (default: the last steps)")
    r.add_argument("--json", action="store_true", help="print the summary as JSON")
    r.set_defaults(run=_run_report)


def _error(message: str, code: int):
    from .cli import CliError  # cli imports this module
    return CliError(message, code)


def _run_trace(args: argparse.Namespace) -> int:
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        raise _error("trace: no command given (mgpu-cached trace -o FILE -- COMMAND)", 2)
    return run_traced(args.output, cmd, gpu=not args.no_gpu, limit=args.limit)


def _run_report(args: argparse.Namespace) -> int:
    window = None
    if args.window:
        try:
            a, b = (float(x) for x in args.window.split(":"))
            window = (a, b)
        except ValueError:
            raise _error("report: --window START:END (µs)", 2) from None
    traces = []
    for path in args.files:
        try:
            traces.append(load(path))
        except TraceError as e:
            raise _error(f"report: {e}", 1) from None
    s = summarize(traces, args.files)
    print(json.dumps(as_json(s), indent=1) if args.json else format_report(s))
    if args.plot:
        try:
            note = plot(traces, s, args.plot, window)
        except OSError as e:
            raise _error(f"report: cannot write {args.plot}: {e.strerror or e}", 1) from None
        if note:
            print(note, file=sys.stderr)
            return 2
        print(f"plot: {args.plot}", file=sys.stderr)
    return 0
