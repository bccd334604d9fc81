# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""``mgpu-cached bench``: what the library saves per launch, on this machine, in a minute.

No MLIR toolchain needed. The package ships an empty kernel as PTX (``data/empty.ptx``); each
worker compiles it once with the driver's own linker for the GPU at hand, then replays through the
mgpu* ABI the call sequence that MLIR-compiled code makes for every synchronous launch:

    LLVM <= 20  mgpuModuleLoad, ModuleGetFunction, StreamCreate, LaunchKernel,
                StreamSynchronize, StreamDestroy, ModuleUnload           (all per launch)
    LLVM >= 21  the same without ModuleLoad/Unload (done once, as its global constructor does)

in three modes of the library: cached (launches on the library's streams through one-node
graph execs, issue 12), cached with ``MGPU_CACHED_GRAPH=0`` (cuLaunchKernel), and
``MGPU_CACHED_DISABLE=1`` (the stock wrapper's behaviour). The mode is read once per process,
so each (sequence, mode) runs in its own worker process; rounds alternate them so drift hits all
alike. A driver-level floor (cuLaunchKernel + cuStreamSynchronize on one stream), its graph
counterpart (a one-node exec updated with cuGraphExecKernelNodeSetParams, cuGraphLaunch +
cuStreamSynchronize) and the cost of one empty Python call into the library (included in every
other row) are measured the same way. The calls are made from Python with
ctypes, which adds the same small cost to both modes: the ratios understate what compiled code
gains (``benchmarks/run.py`` measures that with real MLIR programs).

Progress goes to stderr, the table to stdout; ``--plot FILE.png`` draws the per-iteration
distributions (needs matplotlib: ``pip install matplotlib``). Without a usable GPU it
says so and returns 2.
"""

from __future__ import annotations

import ctypes
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from ._native import Runtime
from ._paths import library_path

PTX_PATH = Path(__file__).resolve().parent / "data" / "empty.ptx"
KERNEL = b"empty"
NO_GPU_EXIT = 2

#: (key, label) of what a worker can replay
SEQUENCES: Tuple[Tuple[str, str], ...] = (
    ("llvm20", "LLVM <= 20 (load per launch)"),
    ("llvm21", "LLVM >= 21 (load in a constructor)"),
)
MODES: Tuple[Tuple[str, str], ...] = (("cached", "cached"), ("nograph", "graph path off"),
                                      ("stock", "stock behaviour"))

vp = ctypes.c_void_p


class BenchError(Exception):
    """The benchmark cannot run here (no driver, no GPU, a failed call)."""


# ---- worker side: runs in a child process, one (sequence, mode) -------------------------------

def _driver(path: str) -> ctypes.CDLL:
    try:
        return ctypes.CDLL(path)
    except OSError as e:
        raise BenchError(f"cannot load the CUDA driver {path}: {e}") from None


def _ok(what: str, result: int) -> None:
    if result != 0:
        raise BenchError(f"{what} failed with CUDA error {result}")


def compile_ptx(cu: ctypes.CDLL, ptx: bytes) -> Tuple[bytes, str]:
    """cubin of ``ptx`` for device 0 (through cuLink*), and the device's name."""
    _ok("cuInit", cu.cuInit(0))
    count = ctypes.c_int(0)
    _ok("cuDeviceGetCount", cu.cuDeviceGetCount(ctypes.byref(count)))
    if count.value < 1:
        raise BenchError("the CUDA driver sees no GPU")
    dev = ctypes.c_int(0)
    _ok("cuDeviceGet", cu.cuDeviceGet(ctypes.byref(dev), 0))
    name = ctypes.create_string_buffer(256)
    cu.cuDeviceGetName(name, 256, dev)
    ctx = vp()
    _ok("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev))
    _ok("cuCtxPushCurrent", cu.cuCtxPushCurrent_v2(ctx))
    try:
        state = vp()
        _ok("cuLinkCreate", cu.cuLinkCreate_v2(0, None, None, ctypes.byref(state)))
        data = ctypes.create_string_buffer(ptx)
        _ok("cuLinkAddData", cu.cuLinkAddData_v2(state, 1, data, ctypes.c_size_t(len(data)),
                                                 b"empty.ptx", 0, None, None))  # 1 = PTX
        out, size = vp(), ctypes.c_size_t(0)
        _ok("cuLinkComplete", cu.cuLinkComplete(state, ctypes.byref(out), ctypes.byref(size)))
        cubin = ctypes.string_at(out, size.value)
        cu.cuLinkDestroy(state)
    finally:
        cu.cuCtxPopCurrent_v2(ctypes.byref(vp()))
    return cubin, name.value.decode(errors="replace")


def _bind(lib: ctypes.CDLL) -> None:
    for name, res, args in (
            ("mgpuModuleLoad", vp, [vp, ctypes.c_size_t]),
            ("mgpuModuleUnload", None, [vp]),
            ("mgpuModuleGetFunction", vp, [vp, ctypes.c_char_p]),
            ("mgpuLaunchKernel", None, [vp] + [ctypes.c_ssize_t] * 6 +
             [ctypes.c_int32, vp, vp, vp, ctypes.c_size_t]),
            ("mgpuStreamCreate", vp, []),
            ("mgpuStreamSynchronize", None, [vp]),
            ("mgpuStreamDestroy", None, [vp]),
            ("mgpu_cached_enabled", ctypes.c_int, [])):
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args


def worker(sequence: str, iterations: int, warmup: int) -> Dict[str, object]:
    """Time ``iterations`` replays of one sequence in this process; ns per iteration."""
    rt = Runtime()
    err = rt.driver_error()
    if err is not None:
        raise BenchError(f"no usable CUDA driver ({err})")
    if rt.backend != "cuda":
        raise BenchError(f"no NVIDIA driver here: the library chose its {rt.backend} backend "
                         f"({rt.driver_path}), and this benchmark times the CUDA one")
    cu = _driver(rt.driver_path)
    cubin, device = compile_ptx(cu, PTX_PATH.read_bytes())
    image = ctypes.create_string_buffer(cubin, len(cubin))  # one address for the whole run
    lib = ctypes.CDLL(str(library_path()))
    _bind(lib)
    clock = time.perf_counter_ns
    samples: List[int] = []
    load, unload, get = lib.mgpuModuleLoad, lib.mgpuModuleUnload, lib.mgpuModuleGetFunction
    create, launch = lib.mgpuStreamCreate, lib.mgpuLaunchKernel
    sync, destroy = lib.mgpuStreamSynchronize, lib.mgpuStreamDestroy
    size = len(cubin)
    if sequence in ("llvm20", "llvm21"):
        module = load(image, size)  # also the LLVM >= 21 constructor's load
        fn = get(module, KERNEL) if module else None
        if not module or not fn:
            raise BenchError("mgpuModuleLoad/mgpuModuleGetFunction failed (see the message above)")
        per_launch = sequence == "llvm20"  # load and unload in every iteration
        if per_launch:
            unload(module)
        for i in range(warmup + iterations):
            t0 = clock()
            if per_launch:
                module = load(image, size)
            fn = get(module, KERNEL)
            s = create()
            launch(fn, 1, 1, 1, 1, 1, 1, 0, s, None, None, 0)
            sync(s)
            destroy(s)
            if per_launch:
                unload(module)
            if i >= warmup:
                samples.append(clock() - t0)
    elif sequence == "floor":
        floor_samples(cu, image, warmup, iterations, samples)
    elif sequence == "graphfloor":
        floor_samples(cu, image, warmup, iterations, samples, graph=True)
    elif sequence == "calls":  # one empty call into the library, 1 per iteration
        enabled = lib.mgpu_cached_enabled
        for i in range(warmup + iterations):
            t0 = clock()
            enabled()
            if i >= warmup:
                samples.append(clock() - t0)
    else:
        raise BenchError(f"unknown sequence {sequence}")
    return {"sequence": sequence, "mode": "cached" if lib.mgpu_cached_enabled() else "stock",
            "device": device, "samples_ns": samples}


class _KernelNodeParams(ctypes.Structure):
    """CUDA_KERNEL_NODE_PARAMS (v2, CUDA 12+)."""
    _fields_ = [("func", vp)] + [(n, ctypes.c_uint) for n in (
        "gridDimX", "gridDimY", "gridDimZ", "blockDimX", "blockDimY", "blockDimZ",
        "sharedMemBytes")] + [("kernelParams", vp), ("extra", vp), ("kern", vp), ("ctx", vp)]


def floor_samples(cu: ctypes.CDLL, image: ctypes.Array, warmup: int, iterations: int,
                  samples: List[int], graph: bool = False) -> None:
    """cuLaunchKernel + cuStreamSynchronize on one stream, module and stream made once; with
    graph, a one-node graph exec of the kernel, updated (cuGraphExecKernelNodeSetParams) and
    launched (cuGraphLaunch) + cuStreamSynchronize."""
    dev, ctx, mod, fn, s = ctypes.c_int(0), vp(), vp(), vp(), vp()
    _ok("cuDeviceGet", cu.cuDeviceGet(ctypes.byref(dev), 0))
    _ok("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev))
    _ok("cuCtxPushCurrent", cu.cuCtxPushCurrent_v2(ctx))
    _ok("cuModuleLoadData", cu.cuModuleLoadData(ctypes.byref(mod), image))
    _ok("cuModuleGetFunction", cu.cuModuleGetFunction(ctypes.byref(fn), mod, KERNEL))
    _ok("cuStreamCreate", cu.cuStreamCreate(ctypes.byref(s), 1))
    launch, sync = cu.cuLaunchKernel, cu.cuStreamSynchronize
    launch.argtypes = [vp] + [ctypes.c_uint] * 7 + [vp, vp, vp]
    sync.argtypes = [vp]
    clock = time.perf_counter_ns
    if graph:
        p = _KernelNodeParams(fn, 1, 1, 1, 1, 1, 1, 0, None, None, None, None)
        g, node, ex = vp(), vp(), vp()
        _ok("cuGraphCreate", cu.cuGraphCreate(ctypes.byref(g), 0))
        _ok("cuGraphAddKernelNode", cu.cuGraphAddKernelNode_v2(ctypes.byref(node), g, None,
                                                               ctypes.c_size_t(0), ctypes.byref(p)))
        _ok("cuGraphInstantiate", cu.cuGraphInstantiateWithFlags(ctypes.byref(ex), g,
                                                                  ctypes.c_ulonglong(0)))
        update, glaunch = cu.cuGraphExecKernelNodeSetParams_v2, cu.cuGraphLaunch
        update.argtypes, glaunch.argtypes = [vp, vp, vp], [vp, vp]
        pp = ctypes.byref(p)
        for i in range(warmup + iterations):
            t0 = clock()
            update(ex, node, pp)
            glaunch(ex, s)
            sync(s)
            if i >= warmup:
                samples.append(clock() - t0)
        return
    for i in range(warmup + iterations):
        t0 = clock()
        launch(fn, 1, 1, 1, 1, 1, 1, 0, s, None, None)
        sync(s)
        if i >= warmup:
            samples.append(clock() - t0)


# ---- parent side --------------------------------------------------------------------------------

@dataclass
class Result:
    label: str
    samples_us: List[float]

    @property
    def median(self) -> float:
        return statistics.median(self.samples_us)

    def quantile(self, q: float) -> float:
        s = sorted(self.samples_us)
        return s[min(len(s) - 1, int(q * len(s)))]


def _run_worker(sequence: str, mode: str, iterations: int, warmup: int) -> Dict[str, object]:
    env = dict(os.environ)
    env.pop("MGPU_CACHED_DISABLE", None)
    env.pop("MGPU_CACHED_GRAPH", None)
    if mode == "stock":
        env["MGPU_CACHED_DISABLE"] = "1"
    elif mode == "nograph":
        env["MGPU_CACHED_GRAPH"] = "0"
    cmd = [sys.executable, "-m", "mgpu_cached.bench", "--worker", sequence,
           "--iterations", str(iterations), "--warmup", str(warmup)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        msg = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise BenchError(msg.removeprefix("mgpu-cached bench: "))
    return json.loads(proc.stdout)


FLOOR = "driver floor (launch + sync)"
GRAPH_FLOOR = "driver graph floor (update + graph launch + sync)"


def plan() -> List[Tuple[str, str, str]]:
    """(sequence, mode, row label) of every worker one round runs, in order."""
    rows = [("floor", "cached", FLOOR), ("graphfloor", "cached", GRAPH_FLOOR)]
    for key, label in SEQUENCES:
        rows += [(key, mode, f"{label}: {mode}") for mode, _ in MODES]
    rows.append(("calls", "cached", "one Python call into the library"))
    return rows


def format_table(results: Dict[str, Result], device: str, iterations: int, rounds: int) -> str:
    """The text table printed to stdout."""
    lines = [f"mgpu-cached bench: empty kernel, per-launch mgpu* call sequences of MLIR code",
             f"device: {device}; {iterations} iterations x {rounds} rounds per row; "
             f"µs per iteration",
             "",
             f"{'sequence':<36} {'cached':>8} {'graph off':>10} {'stock':>8} {'stock/cached':>13}"]
    for key, label in SEQUENCES:
        c, g, s = (results.get(f"{label}: {m}") for m in ("cached", "nograph", "stock"))
        if c and g and s:
            lines.append(f"{label:<36} {c.median:8.2f} {g.median:10.2f} {s.median:8.2f} "
                         f"{s.median / c.median:12.2f}x")
    floor = results.get(FLOOR)
    gfloor = results.get(GRAPH_FLOOR)
    call = results.get("one Python call into the library")
    if floor:
        lines.append(f"{FLOOR:<36} {floor.median:8.2f}")
    if gfloor:
        lines.append(f"{'driver graph floor (update+launch+sync)':<36} {gfloor.median:8.2f}")
    if call:
        lines += ["", f"Each row includes the cost of its Python calls "
                      f"(~{call.median:.2f} µs per call here: 7 calls per LLVM <= 20 iteration, "
                      f"5 for LLVM >= 21, 2 for the floor, 3 for the graph floor). 'cached' "
                      f"launches through one-node graph execs; 'graph off' is "
                      f"MGPU_CACHED_GRAPH=0."]
    return "\n".join(lines)


def write_plot(results: Dict[str, Result], path: str) -> Optional[str]:
    """Histogram of the per-iteration times of each row; returns an error message or None."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return ("--plot needs matplotlib, which is not installed: "
                "pip install matplotlib")
    fig, axes = plt.subplots(1, len(SEQUENCES), figsize=(11, 4), squeeze=False)
    for ax, (_, label) in zip(axes[0], SEQUENCES):
        top = 0.0
        for mode, name in MODES:
            r = results.get(f"{label}: {mode}")
            if r:
                top = max(top, r.quantile(0.99))
        series = [(f"{label}: {m}", n) for m, n in MODES] + [(FLOOR, "driver floor")]
        for key, name in series:
            r = results.get(key)
            if r:
                ax.hist([x for x in r.samples_us if x <= top], bins=80, alpha=0.55,
                        label=f"{name} (median {r.median:.1f} µs)")
        ax.set_title(label, fontsize=10)
        ax.set_xlabel("µs per iteration")
        ax.set_ylabel("iterations")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return None


def run(iterations: int = 3000, rounds: int = 3, warmup: int = 300,
        plot: Optional[str] = None, out=sys.stdout, err=sys.stderr) -> int:
    """The whole benchmark; returns the exit status."""
    driver_error = Runtime().driver_error()
    if driver_error is not None:
        print(f"mgpu-cached bench: no usable CUDA driver here ({driver_error}). This benchmark "
              "needs an NVIDIA GPU and its driver; nothing was measured.", file=err)
        return NO_GPU_EXIT
    rows = plan()
    samples: Dict[str, List[float]] = {label: [] for _, _, label in rows}
    device = "?"
    total = rounds * len(rows)
    step = 0
    try:
        for rnd in range(rounds):
            order = rows if rnd % 2 == 0 else rows[::-1]
            for sequence, mode, label in order:
                step += 1
                print(f"mgpu-cached bench: [{step}/{total}] round {rnd + 1}: {label}",
                      file=err, flush=True)
                res = _run_worker(sequence, mode, iterations, warmup)
                want = "stock" if mode == "stock" else "cached"
                if res["mode"] != want:
                    raise BenchError(f"worker ran in {res['mode']} mode, expected {want}")
                device = str(res["device"])
                samples[label].extend(ns / 1000.0 for ns in res["samples_ns"])  # type: ignore
    except BenchError as e:
        print(f"mgpu-cached bench: cannot run here: {e}. It needs an NVIDIA GPU and its driver.",
              file=err)
        return NO_GPU_EXIT
    results = {label: Result(label, s) for label, s in samples.items()}
    print(format_table(results, device, iterations, rounds), file=out)
    if plot:
        msg = write_plot(results, plot)
        if msg:
            print(f"mgpu-cached bench: {msg}", file=err)
            return 1
        print(f"mgpu-cached bench: plot written to {plot}", file=err)
    return 0


def _worker_main(argv: Sequence[str]) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m mgpu_cached.bench")
    ap.add_argument("--worker", required=True)
    ap.add_argument("--iterations", type=int, required=True)
    ap.add_argument("--warmup", type=int, default=300)
    a = ap.parse_args(argv)
    try:
        print(json.dumps(worker(a.worker, a.iterations, a.warmup)))
    except (BenchError, AttributeError, OSError) as e:  # AttributeError: a driver symbol missing
        print(f"mgpu-cached bench: {e}", file=sys.stderr)
        return NO_GPU_EXIT
    return 0


if __name__ == "__main__":
    sys.exit(_worker_main(sys.argv[1:]))
