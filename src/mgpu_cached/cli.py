# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The ``mgpu-cached`` command: where the library is, how to link or preload it, statistics.

    mgpu-cached                  summary (version, library, backend, driver, mode)
    mgpu-cached --libdir         folder of libmgpu_cached.so
    mgpu-cached --includedir     folder of mgpu_cached.h and mgpu_abi.h
    mgpu-cached --ldflags        -L... -lmgpu_cached -Wl,-rpath,...  (words shell-quoted)
    mgpu-cached --cflags         -I...                                (words shell-quoted)
    mgpu-cached --preload        LD_PRELOAD=.../libmgpu_cached.so     (words shell-quoted)
    mgpu-cached --stock-libdir   folder of the same library named libmlir_cuda_runtime.so and
                                 libmlir_rocm_runtime.so
    mgpu-cached --pkgconfig-dir  folder of mgpu_cached.pc (for PKG_CONFIG_PATH)
    mgpu-cached --cmake-dir      folder of mgpu_cachedConfig.cmake (for -Dmgpu_cached_DIR=)
    mgpu-cached stats [--json] [-- COMMAND ...]
                                 counters of every process of COMMAND, run with the library
                                 preloaded (or of this process); exits with COMMAND's status
    mgpu-cached config           the environment variables, their defaults and values in use
    mgpu-cached --help-env       what each environment variable does
    mgpu-cached bench [--iterations N] [--rounds R] [--plot FILE.png] [--rows GROUPS]
                                 time MLIR's per-launch call sequences, cached vs stock; threads
                                 and sync alloc/free pairs against the driver
                                 (needs a GPU; exit status 2 without one)
    mgpu-cached trace -o FILE [--no-gpu] -- COMMAND ...
                                 timeline of every mgpu* call and kernel (Chrome trace JSON)
    mgpu-cached report FILE... [--plot OUT.png]
                                 per-kernel and per-stream tables (and a plot) of a trace

A subcommand is a function ``add(subparsers)`` in SUBCOMMANDS that adds its parser (with a help
line and a description) and sets ``run=FUNCTION(args) -> exit status`` on it (see _add_stats); a
module of its own may provide it. ``--help`` stays short: the environment variables (45 of them,
described by the library itself) are listed by ``--help-env`` and ``config --help-env`` only.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from typing import Callable, Dict, List, Optional, Tuple

from . import __version__
from . import trace as _trace
from ._native import runtime
from ._paths import (cflags, cmake_dir, include_dir, ldflags, libdir, library_path,
                     pkgconfig_dir, preload, preload_env, stock_libdir)


class CliError(Exception):
    """An error reported as one line ``mgpu-cached: MESSAGE`` with an exit status."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


# ---- stats ---------------------------------------------------------------------------------------

def _print_stats(values: Dict[str, int], as_json: bool, descriptions: Dict[str, str]) -> None:
    if as_json:
        print(json.dumps(values, indent=2, sort_keys=False))
        return
    width = max(len(k) for k in values) if values else 0
    for name, value in values.items():
        print(f"{name:<{width}}  {value:>12}  {descriptions.get(name, '')}")


def _run_command(command: List[str], env: Dict[str, str]) -> int:
    """Run COMMAND, return its exit status as a shell reports it (128+N for signal N)."""
    try:
        proc = subprocess.Popen(command, env=env)
    except FileNotFoundError:
        raise CliError(f"{command[0]}: command not found", 127) from None
    except PermissionError:
        raise CliError(f"{command[0]}: permission denied", 126) from None
    except OSError as e:
        raise CliError(f"{command[0]}: cannot run: {e.strerror}", 126) from None
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the command's to handle
    try:
        code = proc.wait()
    finally:
        signal.signal(signal.SIGINT, old)
    return 128 - code if code < 0 else code


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _signalled(code: int) -> bool:
    """Whether a status from _run_command means the command was ended by a signal: 129 to
    128+NSIG (a shell's report of its child's signal reads the same, and is as good a reason
    for a missing statistics file)."""
    return 128 < code < 128 + signal.NSIG


def _ending(code: int) -> str:
    """How a command ended, for a message: 'exited with status N' or 'ended by signal SIGX'."""
    if _signalled(code):
        return f"ended by signal {_signal_name(code - 128)}"
    return f"exited with status {code}"


def merge_stats(files: List[str]) -> Tuple[Dict[str, int], List[str], int]:
    """Sum the counters of the statistics files (one per process and copy of the library);
    returns (counters, backends named, number of distinct processes)."""
    total: Dict[str, int] = {}
    backends: List[str] = []
    pids = set()
    for path in sorted(files):
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError):
            continue  # a process killed while writing it
        for name, value in data.get("stats", {}).items():
            total[name] = total.get(name, 0) + int(value)
        if data.get("backend") and data["backend"] not in backends:
            backends.append(data["backend"])
        pids.add(data.get("pid", path))
    return total, backends, len(pids)


def _stats_of_command(command: List[str]) -> Tuple[Dict[str, int], str, int, int]:
    """Run COMMAND with the library preloaded; (counters summed over its processes, backend,
    number of processes that loaded the library, COMMAND's exit status)."""
    with tempfile.TemporaryDirectory(prefix="mgpu-cached-stats-") as tmp:
        env = dict(os.environ)
        env.update(preload_env(env))
        env["MGPU_CACHED_STATS_FILE"] = os.path.join(tmp, "stats-%p.json")
        code = _run_command(command, env)
        values, backends, processes = merge_stats(glob.glob(os.path.join(tmp, "stats-*")))
    return values, ",".join(backends) or "none", processes, code


def _run_stats(args: argparse.Namespace) -> int:
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    code = 0
    if cmd:
        values, backend, processes, code = _stats_of_command(cmd)
        ending = _ending(code)
        if processes == 0:
            # each process writes its file at exit (a library destructor): a process ended by a
            # signal never does, whether or not it loaded the library
            if _signalled(code):
                print(f"mgpu-cached: '{cmd[0]}' {ending} before writing statistics (each "
                      "process writes them when it exits): no statistics", file=sys.stderr)
            else:
                print(f"mgpu-cached: no process of '{cmd[0]}' loaded {library_path().name} with "
                      "the statistics on (a static or setuid program, one that cleared LD_PRELOAD, "
                      "or one that ended through _exit): no statistics", file=sys.stderr)
            return code
        if code != 0:
            print(f"mgpu-cached: '{cmd[0]}' {ending}"
                  + (" (the counters are those of its processes that exited)"
                     if _signalled(code) else ""), file=sys.stderr)
    else:
        values, backend, processes = runtime().stats(), runtime().backend, 1
    if not args.json:
        print(f"backend  {backend}")
        if cmd:
            print(f"processes  {processes} (counters summed over them)")
    _print_stats(values, args.json, runtime().descriptions())
    sys.stdout.flush()
    return code


def _add_stats(sub) -> None:
    p = sub.add_parser("stats", help="cache and pool counters of a command (or of this process)",
                       description="Run COMMAND with the library preloaded and print the counters "
                       "of every process of it that loaded the library, summed (one statistics "
                       "file per process). Exits with COMMAND's status.")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- COMMAND ARGS",
                   help="run COMMAND with the library preloaded and report (without it: the "
                   "counters of this process)")
    p.set_defaults(run=_run_stats)


# ---- config ----------------------------------------------------------------------------------

def environment_help() -> str:
    """The table of environment variables, from the library itself (the one place they are
    parsed); OSError when the library cannot be loaded."""
    settings = runtime().config()
    lines = textwrap.wrap("environment (read once by the library, at its first call; an invalid "
                          "value is reported on stderr and the default used):", width=78)
    for s in settings:
        dflt = f" (default {s.default})" if s.default else ""
        lines.append(f"  {s.name}")
        lines += textwrap.wrap(s.help + dflt, width=78, initial_indent="      ",
                               subsequent_indent="      ")
    return "\n".join(lines)


def _run_config(args: argparse.Namespace) -> int:
    settings = runtime().config()
    if args.json:
        print(json.dumps([s._asdict() for s in settings], indent=2))
        return 0
    width = max(len(s.name) for s in settings)
    for s in settings:
        how = "set" if s.explicit else "default"
        print(f"{s.name:<{width}}  {s.value or '(unset)':<16} {how}")
    return 0


class _HelpEnv(argparse.Action):
    """--help-env: print what each environment variable does, then exit (as --help does)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="list the environment variables the library reads, with what each does"):
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(environment_help())
        parser.exit(0)


def _add_config(sub) -> None:
    p = sub.add_parser("config", help="the environment variables and the values in use",
                       description="Every environment variable the library reads, the value it "
                       "uses in this environment and whether it was set (an invalid value is "
                       "reported on stderr). --help-env says what each one does.")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--help-env", action=_HelpEnv)
    p.set_defaults(run=_run_config)


# ---- bench -----------------------------------------------------------------------------------

def _run_bench(args: argparse.Namespace) -> int:
    from .bench import parse_rows, run as run_bench
    if args.iterations < 1 or args.rounds < 1:
        raise CliError("bench: --iterations and --rounds must be at least 1", 2)
    try:
        rows = parse_rows(args.rows)
    except ValueError as e:
        raise CliError(f"bench: {e}", 2) from None
    return run_bench(iterations=args.iterations, rounds=args.rounds, plot=args.plot, rows=rows)


def _add_bench(sub) -> None:
    p = sub.add_parser("bench", help="per-launch cost, cached vs stock behaviour (GPU)",
                       description="Time the call sequence MLIR-compiled code makes for every "
                       "launch (an empty kernel shipped as PTX), in the library's cached mode and "
                       "with the stock behaviour, and print per-launch times; then launches from "
                       "1, 4 and 16 threads and synchronous alloc + free pairs, each against the "
                       "driver doing the same work. Chains of launches and the first call of a "
                       "large module need MLIR objects: benchmarks/run.py --extras "
                       "chains,first_call (in the source tree). Needs an NVIDIA GPU: "
                       "exits with status 2 without one.")
    p.add_argument("--iterations", type=int, default=3000, help="per worker (default 3000)")
    p.add_argument("--rounds", type=int, default=3, help="workers per row (default 3)")
    p.add_argument("--plot", metavar="FILE.png", help="draw the distributions (matplotlib)")
    p.add_argument("--rows", default="launch,threads,alloc", metavar="GROUPS",
                   help="comma list of launch, threads, alloc (default all)")
    p.set_defaults(run=_run_bench)


SUBCOMMANDS: List[Callable] = [_add_stats, _add_config, _add_bench,
                               _trace.add_trace, _trace.add_report]  # trace.py


# ---- the command -------------------------------------------------------------------------------

def _summary() -> str:
    rt = runtime()
    err = rt.driver_error()
    settings = {s.name: s for s in rt.config()}
    chosen = settings.get("MGPU_CACHED_BACKEND")
    how = ("set by MGPU_CACHED_BACKEND" if chosen is not None and chosen.explicit
           and chosen.value != "auto"
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


_PRINTERS = {  # option -> what it prints
    "libdir": lambda: str(libdir()),
    "includedir": lambda: str(include_dir()),
    "ldflags": ldflags,
    "cflags": cflags,
    "preload": preload,
    "stock_libdir": lambda: str(stock_libdir()),
    "pkgconfig_dir": lambda: str(pkgconfig_dir()),
    "cmake_dir": lambda: str(cmake_dir()),
}


def _parser() -> argparse.ArgumentParser:
    class Parser(argparse.ArgumentParser):
        def print_help(self, file=None) -> None:  # argparse would swallow a broken pipe
            print(self.format_help(), end="", file=file or sys.stdout)

    parser = Parser(prog="mgpu-cached",
                    description="mgpu-cached: a drop-in libmlir_cuda_runtime.so with cached "
                    "modules, pooled streams and events and a caching allocator. Without options: "
                    "a summary (version, library, backend, driver, mode). The options print where "
                    "the library is and how to link or preload it.",
                    epilog="'mgpu-cached COMMAND --help' describes a command; 'mgpu-cached "
                    "--help-env' the environment variables.")
    version = f"mgpu-cached {__version__}"
    parser.add_argument("--version", action="version", version=version)
    parser.add_argument("--help-env", action=_HelpEnv)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--libdir", action="store_true", help="print the library folder")
    group.add_argument("--includedir", action="store_true", help="print the header folder")
    group.add_argument("--ldflags", action="store_true", help="print the flags to link it")
    group.add_argument("--cflags", action="store_true", help="print the flags to compile with "
                       "its headers")
    group.add_argument("--preload", action="store_true", help="print the LD_PRELOAD assignment")
    group.add_argument("--stock-libdir", action="store_true",
                       help="print the folder of the copy named libmlir_cuda_runtime.so")
    group.add_argument("--pkgconfig-dir", action="store_true",
                       help="print the folder of mgpu_cached.pc (PKG_CONFIG_PATH)")
    group.add_argument("--cmake-dir", action="store_true",
                       help="print the folder of mgpu_cachedConfig.cmake (mgpu_cached_DIR)")
    sub = parser.add_subparsers(dest="command", title="commands", metavar="COMMAND")
    for add in SUBCOMMANDS:
        add(sub)
    for p in sub.choices.values():  # --version everywhere
        p.add_argument("--version", action="version", version=version)
    return parser


def _main(argv: Optional[List[str]]) -> int:
    args = _parser().parse_args(argv)
    for option, printer in _PRINTERS.items():
        if getattr(args, option):
            library_path()  # no paths or flags that point at a missing build
            print(printer())
            return 0
    run = getattr(args, "run", None)
    if run is not None:
        return run(args)
    print(_summary())
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    try:
        try:
            code = _main(argv)
        except SystemExit as e:  # argparse after --help, --version or a usage error
            code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
        sys.stdout.flush()
        return code
    except CliError as e:
        print(f"mgpu-cached: {e}", file=sys.stderr)
        return e.status
    except BrokenPipeError:
        # the reader went away (`mgpu-cached ... | head -1`): say so once, no traceback, and keep
        # the interpreter from failing again on the final flush
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        print("mgpu-cached: output closed early (broken pipe)", file=sys.stderr)
        return 128 + signal.SIGPIPE
    except OSError as e:  # the library is missing or cannot be loaded
        print(f"mgpu-cached: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("mgpu-cached: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
