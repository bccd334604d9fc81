"""The ``mgpu-cached`` command: where the library is, how to link or preload it, statistics.

    mgpu-cached                  summary (version, library, backend, driver, mode)
    mgpu-cached --libdir         folder of libmgpu_cached.so
    mgpu-cached --ldflags        -L... -lmgpu_cached -Wl,-rpath,...
    mgpu-cached --preload        LD_PRELOAD=.../libmgpu_cached.so
    mgpu-cached --stock-libdir   folder of the same library named libmlir_cuda_runtime.so and
                                 libmlir_rocm_runtime.so
    mgpu-cached stats [--json] [-- COMMAND ...]
                                 statistics of COMMAND run with the library preloaded
                                 (or of this process when no command is given)
    mgpu-cached bench [--iterations N] [--rounds R] [--plot FILE.png]
                                 time MLIR's per-launch call sequences, cached vs stock
                                 (needs a GPU; exit status 2 without one)
    mgpu-cached trace -o FILE [--no-gpu] -- COMMAND ...
                                 timeline of every mgpu* call and kernel (Chrome trace JSON)
    mgpu-cached report FILE... [--plot OUT.png]
                                 per-kernel and per-stream tables (and a plot) of a trace
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from typing import Dict, List, Optional

from . import __version__
from . import trace as _trace
from ._native import runtime
from ._paths import ldflags, libdir, library_path, preload, stock_libdir


def _print_stats(values: Dict[str, int], as_json: bool, descriptions: Dict[str, str]) -> None:
    if as_json:
        print(json.dumps(values, indent=2, sort_keys=False))
        return
    width = max(len(k) for k in values) if values else 0
    for name, value in values.items():
        print(f"{name:<{width}}  {value:>12}  {descriptions.get(name, '')}")


def _stats_of_command(command: List[str]) -> Dict[str, object]:
    """The statistics file the command wrote: version, enabled, backend, stats."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "stats.json")
        env = dict(os.environ)
        pre = env.get("LD_PRELOAD", "")
        env["LD_PRELOAD"] = str(library_path()) + (" " + pre if pre else "")
        env["MGPU_CACHED_STATS_FILE"] = out
        code = subprocess.call(command, env=env)
        if code != 0:
            print(f"mgpu-cached: command exited with status {code}", file=sys.stderr)
        if not os.path.exists(out):
            raise SystemExit("mgpu-cached: the command wrote no statistics (did it exit through "
                             "exit()/return from main with the library loaded?)")
        with open(out) as f:
            return json.load(f)


def _summary() -> str:
    rt = runtime()
    err = rt.driver_error()
    how = ("set by MGPU_CACHED_BACKEND" if os.environ.get("MGPU_CACHED_BACKEND") in ("cuda", "hip")
           else "automatic: cuda if libcuda.so.1 loads and has a GPU, else hip if libamdhip64.so "
                "loads")
    lines = [
        f"mgpu-cached {__version__}",
        f"library:  {library_path()}",
        f"backend:  {rt.backend} ({how})",
        f"mode:     {'cached' if rt.enabled else 'stock behaviour (MGPU_CACHED_DISABLE)'}",
        f"driver:   {rt.driver_path}: {'loaded' if err is None else err}",
    ]
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="mgpu-cached", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"mgpu-cached {__version__}")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--libdir", action="store_true", help="print the library folder")
    group.add_argument("--ldflags", action="store_true", help="print the flags to link it")
    group.add_argument("--preload", action="store_true", help="print the LD_PRELOAD assignment")
    group.add_argument("--stock-libdir", action="store_true",
                       help="print the folder of the copy named libmlir_cuda_runtime.so")
    sub = parser.add_subparsers(dest="command")
    p_stats = sub.add_parser("stats", help="cache and pool statistics")
    p_stats.add_argument("--json", action="store_true", help="print JSON")
    p_stats.add_argument("cmd", nargs=argparse.REMAINDER,
                         help="-- COMMAND ARGS: run it with the library preloaded and report")
    p_bench = sub.add_parser("bench", help="per-launch cost, cached vs stock behaviour (GPU)")
    p_bench.add_argument("--iterations", type=int, default=3000, help="per worker (default 3000)")
    p_bench.add_argument("--rounds", type=int, default=3, help="workers per row (default 3)")
    p_bench.add_argument("--plot", metavar="FILE.png", help="draw the distributions (matplotlib)")
    _trace.add_parsers(sub)  # trace, report (trace.py)
    args = parser.parse_args(argv)

    if args.libdir:
        print(libdir())
    elif args.ldflags:
        print(ldflags())
    elif args.preload:
        print(preload())
    elif args.stock_libdir:
        print(stock_libdir())
    elif args.command == "stats":
        cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
        if cmd:
            data = _stats_of_command(cmd)
            values, backend = data["stats"], data.get("backend", "")
        else:
            values, backend = runtime().stats(), runtime().backend
        if not args.json:
            print(f"backend  {backend}")
        _print_stats(values, args.json, runtime().descriptions())
    elif args.command == "bench":
        from .bench import run as run_bench
        if args.iterations < 1 or args.rounds < 1:
            parser.error("bench: --iterations and --rounds must be at least 1")
        return run_bench(iterations=args.iterations, rounds=args.rounds, plot=args.plot)
    elif args.command in ("trace", "report"):
        return _trace.main(args)
    else:
        print(_summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
