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

Two more groups of rows (issue 21), each against the driver doing the same work:

    threads  1, 4 and 16 Python threads, each on its own stream (mgpuStreamCreate), launching the
             empty kernel asynchronously (mgpuLaunchKernel, the function resolved once) then
             synchronising; against the driver loop with the same threads (cuLaunchKernel on a
             stream of each thread's own, the primary context current). µs per launch = wall
             time / all launches; ctypes releases the GIL only inside each call, so Python
             threads understate what compiled threads reach (``benchmarks/conc/throughput.py``)
    alloc    synchronous pairs mgpuMemAlloc(bytes, NULL, host_shared) + mgpuMemFree(p, NULL)
             (MLIR's synchronous gpu.alloc / gpu.dealloc) at 256 B, 1 MiB and 64 MiB, device and
             host_shared; against cuMemAlloc / cuMemAllocManaged + cuMemFree

``rows`` (``--rows launch,threads,alloc``) picks the groups. Chains of launches and the first call
of a large module need MLIR-compiled objects: ``benchmarks/run.py --extras chains,first_call``.

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
import threading
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

#: the groups of rows ``run`` can measure (``--rows``)
ROW_GROUPS: Tuple[str, ...] = ("launch", "threads", "alloc")
THREADS: Tuple[int, ...] = (1, 4, 16)
ALLOC_SIZES: Tuple[int, ...] = (256, 1 << 20, 64 << 20)
ALLOC_KINDS: Tuple[str, ...] = ("device", "host_shared")
THREAD_REPS = 3  # timed repetitions per thread count in one worker

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
            ("mgpuMemAlloc", vp, [ctypes.c_uint64, vp, ctypes.c_bool]),
            ("mgpuMemFree", None, [vp, vp]),
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
    elif sequence in ("threads", "threadsfloor"):
        return _result(sequence, lib, device, rows=thread_rows(
            lib, cu, image, sequence == "threadsfloor", max(1, iterations // 3), warmup))
    elif sequence in ("alloc", "allocfloor"):
        return _result(sequence, lib, device, rows=alloc_rows(
            lib, cu, sequence == "allocfloor", max(1, iterations // 10), min(warmup, 20)))
    elif sequence == "calls":  # one empty call into the library, 1 per iteration
        enabled = lib.mgpu_cached_enabled
        for i in range(warmup + iterations):
            t0 = clock()
            enabled()
            if i >= warmup:
                samples.append(clock() - t0)
    else:
        raise BenchError(f"unknown sequence {sequence}")
    return _result(sequence, lib, device, samples=samples)


def _result(sequence: str, lib: ctypes.CDLL, device: str, samples: Optional[List[int]] = None,
            rows: Optional[Dict[str, List[int]]] = None) -> Dict[str, object]:
    """A worker's JSON answer: one row's samples (ns), or several rows' (``rows_ns``)."""
    out: Dict[str, object] = {"sequence": sequence, "device": device,
                              "mode": "cached" if lib.mgpu_cached_enabled() else "stock"}
    if rows is not None:
        out["rows_ns"] = rows
    else:
        out["samples_ns"] = samples or []
    return out


def _primary_context(cu: ctypes.CDLL) -> ctypes.c_void_p:
    """Device 0's primary context (retained; the process ends with it)."""
    dev, ctx = ctypes.c_int(0), vp()
    _ok("cuDeviceGet", cu.cuDeviceGet(ctypes.byref(dev), 0))
    _ok("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev))
    return ctx


def thread_rows(lib: ctypes.CDLL, cu: ctypes.CDLL, image: ctypes.Array, driver: bool,
                launches: int, warmup: int) -> Dict[str, List[int]]:
    """For each count in THREADS: that many threads, each on its own stream, ``launches``
    asynchronous launches of the empty kernel each, then a sync; THREAD_REPS samples of wall
    time / all launches (ns). ``driver``: cuLaunchKernel on a cuStreamCreate stream of each thread
    with the primary context current (the driver loop); else mgpuLaunchKernel on an
    mgpuStreamCreate stream, the function resolved once, no context made current by the thread."""
    clock = time.perf_counter_ns
    if driver:
        ctx = _primary_context(cu)
        _ok("cuCtxPushCurrent", cu.cuCtxPushCurrent_v2(ctx))
        mod, fn = vp(), vp()
        _ok("cuModuleLoadData", cu.cuModuleLoadData(ctypes.byref(mod), image))
        _ok("cuModuleGetFunction", cu.cuModuleGetFunction(ctypes.byref(fn), mod, KERNEL))
        launch, sync = cu.cuLaunchKernel, cu.cuStreamSynchronize
        launch.argtypes = [vp] + [ctypes.c_uint] * 7 + [vp, vp, vp]
        sync.argtypes = [vp]
        set_current = cu.cuCtxSetCurrent
        set_current.argtypes = [vp]
    else:
        module = lib.mgpuModuleLoad(image, len(image))
        fn = lib.mgpuModuleGetFunction(module, KERNEL) if module else None
        if not module or not fn:
            raise BenchError("mgpuModuleLoad/mgpuModuleGetFunction failed (see the message above)")
    errors: List[str] = []

    def one(n: int, barrier: threading.Barrier, spans: List[Tuple[int, int]]) -> None:
        try:
            if driver:
                _ok("cuCtxSetCurrent", set_current(ctx))
                s = vp()
                _ok("cuStreamCreate", cu.cuStreamCreate(ctypes.byref(s), 1))
                barrier.wait()
                t0 = clock()
                for _ in range(n):
                    launch(fn, 1, 1, 1, 1, 1, 1, 0, s, None, None)
                _ok("cuStreamSynchronize", sync(s))
                t1 = clock()
                cu.cuStreamDestroy_v2(s)
            else:
                s = lib.mgpuStreamCreate()
                barrier.wait()
                t0 = clock()
                for _ in range(n):
                    lib.mgpuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, None, None, 0)
                lib.mgpuStreamSynchronize(s)
                t1 = clock()
                lib.mgpuStreamDestroy(s)
            spans.append((t0, t1))
        except BenchError as e:
            errors.append(str(e))
            barrier.abort()
        except threading.BrokenBarrierError:
            pass

    def rep(count: int, n: int) -> int:
        barrier = threading.Barrier(count)
        spans: List[Tuple[int, int]] = []
        threads = [threading.Thread(target=one, args=(n, barrier, spans))
                   for _ in range(count)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise BenchError(errors[0])
        return (max(b for _, b in spans) - min(a for a, _ in spans)) // (count * n)

    rows: Dict[str, List[int]] = {}
    for count in THREADS:
        if warmup:
            rep(count, min(warmup, launches))
        rows[str(count)] = [rep(count, launches) for _ in range(THREAD_REPS)]
    return rows


def alloc_key(kind: str, size: int) -> str:
    """Row key of one (memory kind, size) of the alloc group, e.g. ``device 256 B``."""
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{kind} {size >> shift} {unit}"
    return f"{kind} {size} B"


def alloc_rows(lib: ctypes.CDLL, cu: ctypes.CDLL, driver: bool, pairs: int, warmup: int
               ) -> Dict[str, List[int]]:
    """ns per synchronous alloc + free pair for each of ALLOC_KINDS x ALLOC_SIZES:
    mgpuMemAlloc(bytes, NULL, host_shared) + mgpuMemFree(p, NULL), or with ``driver``
    cuMemAlloc / cuMemAllocManaged(CU_MEM_ATTACH_GLOBAL) + cuMemFree, the primary context
    current."""
    clock = time.perf_counter_ns
    rows: Dict[str, List[int]] = {}
    if driver:
        _ok("cuCtxPushCurrent", cu.cuCtxPushCurrent_v2(_primary_context(cu)))
        alloc_dev, alloc_man, free = cu.cuMemAlloc_v2, cu.cuMemAllocManaged, cu.cuMemFree_v2
        alloc_dev.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
        alloc_man.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t, ctypes.c_uint]
        free.argtypes = [ctypes.c_uint64]
    malloc, mfree = lib.mgpuMemAlloc, lib.mgpuMemFree
    for kind in ALLOC_KINDS:
        shared = kind == "host_shared"
        for size in ALLOC_SIZES:
            samples: List[int] = []
            ptr = ctypes.c_uint64(0)
            for i in range(warmup + pairs):
                t0 = clock()
                if driver:
                    r = (alloc_man(ctypes.byref(ptr), size, 1) if shared
                         else alloc_dev(ctypes.byref(ptr), size))
                    _ok("cuMemAllocManaged" if shared else "cuMemAlloc", r)
                    _ok("cuMemFree", free(ptr.value))
                else:
                    p = malloc(size, None, shared)
                    if not p:
                        raise BenchError(f"mgpuMemAlloc({size}) failed (see the message above)")
                    mfree(p, None)
                if i >= warmup:
                    samples.append(clock() - t0)
            rows[alloc_key(kind, size)] = samples
    return rows


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


THREADS_LABEL = "threads"
ALLOC_LABEL = "alloc"
# (sequence, mode, column) of the workers of the threads and alloc groups; "driver" columns run the
# driver's own calls (their worker still loads the library, in cached mode)
GROUP_WORKERS: Dict[str, Tuple[Tuple[str, str, str], ...]] = {
    "threads": (("threadsfloor", "cached", "driver"), ("threads", "cached", "cached"),
                ("threads", "stock", "stock")),
    "alloc": (("allocfloor", "cached", "driver"), ("alloc", "cached", "cached"),
              ("alloc", "stock", "stock")),
}


def row_key(group: str, column: str, sub: str) -> str:
    """Result key of one cell of the threads / alloc groups, e.g. ``threads: cached [4]``."""
    return f"{group}: {column} [{sub}]"


def parse_rows(text: str) -> List[str]:
    """``launch,threads`` -> the groups, in ROW_GROUPS order; ValueError on an unknown name."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    bad = [n for n in names if n not in ROW_GROUPS]
    if bad or not names:
        raise ValueError(f"--rows: unknown {bad or 'empty list'}; choose from "
                         f"{', '.join(ROW_GROUPS)}")
    return [g for g in ROW_GROUPS if g in names]


def plan(groups: Sequence[str] = ROW_GROUPS) -> List[Tuple[str, str, str]]:
    """(sequence, mode, row label) of every worker one round runs, in order. The threads and
    alloc workers measure several rows each: their label is ``GROUP: COLUMN``."""
    rows: List[Tuple[str, str, str]] = []
    if "launch" in groups:
        rows += [("floor", "cached", FLOOR), ("graphfloor", "cached", GRAPH_FLOOR)]
        for key, label in SEQUENCES:
            rows += [(key, mode, f"{label}: {mode}") for mode, _ in MODES]
        rows.append(("calls", "cached", "one Python call into the library"))
    for group in ("threads", "alloc"):
        if group in groups:
            rows += [(seq, mode, f"{group}: {col}") for seq, mode, col in GROUP_WORKERS[group]]
    return rows


def _ratio(a: Optional[Result], b: Optional[Result]) -> str:
    return f"{a.median / b.median:.2f}x" if a and b and b.median > 0 else "-"


def format_table(results: Dict[str, Result], device: str, iterations: int, rounds: int) -> str:
    """The text table printed to stdout (the groups whose results are there)."""
    lines = [f"mgpu-cached bench: empty kernel, per-launch mgpu* call sequences of MLIR code",
             f"device: {device}; {iterations} iterations x {rounds} rounds per row; "
             f"µs per iteration"]
    if any(f"{label}: cached" in results for _, label in SEQUENCES):
        lines += ["", f"{'sequence':<36} {'cached':>8} {'graph off':>10} {'stock':>8} "
                  f"{'stock/cached':>13}"]
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
    thr = {(col, str(t)): results.get(row_key("threads", col, str(t)))
           for t in THREADS for col in ("driver", "cached", "stock")}
    if any(thr.values()):
        lines += ["", f"threads, each on its own stream: {max(1, iterations // 3)} async launches "
                  f"each + sync, {THREAD_REPS} reps per worker; µs per launch (wall / launches); "
                  f"x driver = the driver loop's time / this one (throughput, >= 1.00 is as fast)",
                  f"{'threads':<36} {'driver':>8} {'cached':>8} {'stock':>8} "
                  f"{'cached x driver':>16} {'stock x driver':>15}"]
        for t in THREADS:
            d, c, s = (thr[(col, str(t))] for col in ("driver", "cached", "stock"))
            if not (d or c or s):
                continue
            cells = [f"{r.median:8.2f}" if r else f"{'-':>8}" for r in (d, c, s)]
            lines.append(f"{t:<36} " + " ".join(cells) +
                         f" {_ratio(d, c):>16} {_ratio(d, s):>15}")
    alloc = {(col, alloc_key(k, n)): results.get(row_key("alloc", col, alloc_key(k, n)))
             for k in ALLOC_KINDS for n in ALLOC_SIZES for col in ("driver", "cached", "stock")}
    if any(alloc.values()):
        lines += ["", f"synchronous alloc + free(NULL stream) pairs: mgpuMemAlloc + mgpuMemFree "
                  f"against cuMemAlloc / cuMemAllocManaged + cuMemFree; "
                  f"{max(1, iterations // 10)} pairs per worker; µs per pair",
                  f"{'memory, size':<36} {'driver':>8} {'cached':>8} {'stock':>8} "
                  f"{'cached/stock':>13} {'cached/driver':>14}"]
        for k in ALLOC_KINDS:
            for n in ALLOC_SIZES:
                key = alloc_key(k, n)
                d, c, s = (alloc[(col, key)] for col in ("driver", "cached", "stock"))
                if not (d or c or s):
                    continue
                cells = [f"{r.median:8.2f}" if r else f"{'-':>8}" for r in (d, c, s)]
                lines.append(f"{key:<36} " + " ".join(cells) +
                             f" {_ratio(c, s):>13} {_ratio(c, d):>14}")
    if any(thr.values()) or any(alloc.values()):
        lines += ["", "Chains of launches and the first call of a 301-kernel module need "
                  "MLIR-compiled objects: benchmarks/run.py --extras chains,first_call."]
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
        plot: Optional[str] = None, out=sys.stdout, err=sys.stderr,
        rows: Sequence[str] = ROW_GROUPS) -> int:
    """The whole benchmark (the groups of ``rows``); returns the exit status."""
    driver_error = Runtime().driver_error()
    if driver_error is not None:
        print(f"mgpu-cached bench: no usable CUDA driver here ({driver_error}). This benchmark "
              "needs an NVIDIA GPU and its driver; nothing was measured.", file=err)
        return NO_GPU_EXIT
    workers = plan(rows)
    samples: Dict[str, List[float]] = {}
    device = "?"
    total = rounds * len(workers)
    step = 0
    try:
        for rnd in range(rounds):
            order = workers if rnd % 2 == 0 else workers[::-1]
            for sequence, mode, label in order:
                step += 1
                print(f"mgpu-cached bench: [{step}/{total}] round {rnd + 1}: {label}",
                      file=err, flush=True)
                res = _run_worker(sequence, mode, iterations, warmup)
                want = "stock" if mode == "stock" else "cached"
                if res["mode"] != want:
                    raise BenchError(f"worker ran in {res['mode']} mode, expected {want}")
                device = str(res["device"])
                if "rows_ns" in res:  # GROUP: COLUMN -> one row per thread count / size
                    group, _, column = label.partition(": ")
                    for sub, ns in res["rows_ns"].items():  # type: ignore
                        samples.setdefault(row_key(group, column, sub), []).extend(
                            x / 1000.0 for x in ns)
                else:
                    samples.setdefault(label, []).extend(
                        ns / 1000.0 for ns in res["samples_ns"])  # type: ignore
    except BenchError as e:
        print(f"mgpu-cached bench: cannot run here: {e}. It needs an NVIDIA GPU and its driver.",
              file=err)
        return NO_GPU_EXIT
    results = {label: Result(label, s) for label, s in samples.items() if s}
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
