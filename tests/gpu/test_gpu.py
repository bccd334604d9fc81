# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""mgpu-cached on a real NVIDIA GPU: results computed on the GPU and checked, driver call counts,
handle reuse, context preservation, loading before main and before the device is chosen."""

import ctypes
import os
import subprocess
import threading

import pytest

import mgpu_cached
from conftest import CC, DATA, GRAPH_EAGER, blob_buffer, overwrite
from gpu_support import countcuda_build, cu, gpu, make_gpu_runtime, ok  # noqa: F401 (fixtures)

if cu is None:
    pytest.skip("GPU tests need cuda-python (pip install cuda-python) and an NVIDIA GPU",
                allow_module_level=True)
np = pytest.importorskip("numpy", reason="GPU tests need numpy")

N = 1 << 16


def blob(name):
    return (DATA / name).read_bytes() + (b"\0" if name.endswith(".ptx") else b"")


class Saxpy:
    """Device buffers x, y for saxpy(a, x, y, n) and the expected y after `times` calls."""

    def __init__(self, gpu_ctx):
        ok(cu.cuCtxPushCurrent(gpu_ctx))
        self.x = (np.arange(N) % 7).astype(np.float32)
        self.y0 = (np.arange(N) % 3).astype(np.float32)
        self.dx = ok(cu.cuMemAlloc(N * 4))
        self.dy = ok(cu.cuMemAlloc(N * 4))
        ok(cu.cuMemcpyHtoD(self.dx, self.x, N * 4))
        ok(cu.cuMemcpyHtoD(self.dy, self.y0, N * 4))
        ok(cu.cuCtxPopCurrent())
        self.ctx = gpu_ctx
        self._a = ctypes.c_float(1.0)
        self._px = ctypes.c_uint64(int(self.dx))
        self._py = ctypes.c_uint64(int(self.dy))
        self._n = ctypes.c_int(N)
        self.params = (ctypes.c_void_p * 4)(*[ctypes.addressof(v) for v in
                                              (self._a, self._px, self._py, self._n)])

    def result(self):
        out = np.empty(N, dtype=np.float32)
        ok(cu.cuCtxPushCurrent(self.ctx))
        ok(cu.cuMemcpyDtoH(out, self.dy, N * 4))
        ok(cu.cuMemFree(self.dx))
        ok(cu.cuMemFree(self.dy))
        ok(cu.cuCtxPopCurrent())
        return out

    def expected(self, times):
        return self.y0 + times * self.x


def llvm19_step(rt, buf, params, jit=False):
    """What LLVM <= 20 code does per launch."""
    m = rt.mgpuModuleLoadJIT(buf, 2, 0) if jit else rt.mgpuModuleLoad(buf, len(buf))
    f = rt.mgpuModuleGetFunction(m, b"saxpy")
    s = rt.mgpuStreamCreate()
    rt.mgpuLaunchKernel(f, N // 256, 1, 1, 256, 1, 1, 0, s, params, None, 4)
    rt.mgpuStreamSynchronize(s)
    rt.mgpuStreamDestroy(s)
    rt.mgpuModuleUnload(m)
    return m, f, s


@pytest.mark.parametrize("kind", ["fatbin", "cubin", "ptx", "ptx-jit"])
def test_llvm19_loop_results_and_driver_counts(make_gpu_runtime, gpu, kind):
    rt = make_gpu_runtime()
    buf = blob_buffer(blob("kernels.ptx" if kind.startswith("ptx") else f"kernels.{kind}"))
    data = Saxpy(gpu)
    handles = [llvm19_step(rt, buf, data.params, jit=kind == "ptx-jit") for _ in range(1000)]
    np.testing.assert_array_equal(data.result(), data.expected(1000))
    assert len({(m, f) for m, f, _ in handles}) == 1  # same module and function handle every time
    # driver handles (the default): a destroyed stream is parked without a driver call and handed
    # out again once a later synchronisation found it idle, so two driver streams take turns
    # (streams/pool.c); tagged handles: a destroyed handle is never reused...
    tagged = os.environ.get("MGPU_CACHED_STREAM_HANDLES") == "tagged"
    n = len({s for _, _, s in handles})
    assert n == 1000 if tagged else 1 <= n <= 2
    load = "cuModuleLoadDataEx" if kind == "ptx-jit" else "cuModuleLoadData"  # the JIT: options
    c = {k: rt.count(k) for k in [load, "cuLibraryLoadData", "cuModuleUnload",
                                   "cuModuleGetFunction", "cuLaunchKernel", "cuStreamCreate",
                                   "cuStreamDestroy", "cuDeviceGetAttribute"]}
    # the graph launch path (MGPU_CACHED_GRAPH=1, issue 12) launches through cuGraphLaunch: one
    # exec for the kernel on the one driver stream, its node never updated (same arguments)
    graph = rt.count("cuGraphLaunch")
    if os.environ.get("MGPU_CACHED_GRAPH") == "1":
        # (the launches before the exec is due take the stream path: the process's first 99 and
        # the function's first 3 by default, graph_launch.c "First launches")
        early = max(int(os.environ.get("MGPU_CACHED_GRAPH_FIRST_AFTER", "100")),
                    int(os.environ.get("MGPU_CACHED_GRAPH_AFTER", "4")), 1) - 1
        assert (graph, rt.count("cuGraphInstantiate"),
                rt.count("cuGraphExecKernelNodeSetParams")) == (1000 - early, 1 if tagged else n,
                                                                0)
    c["cuLaunchKernel"] += graph
    # one module load, one kernel resolved: the one looked up (at its first look-up), with the
    # driver's module API as stock's; the fatbin (an sm_90 cubin and zstd-compressed PTX) asks
    # for each device's compute capability once (major, minor: the module-state scan reads the
    # entry the devices load, when every device has that architecture, blob_state.h)
    ndev = ok(cu.cuDeviceGetCount())
    assert c == {load: 1, "cuLibraryLoadData": 0, "cuModuleUnload": 0,
                 "cuModuleGetFunction": 1, "cuLaunchKernel": 1000,
                 "cuStreamCreate": 1 if tagged else n, "cuStreamDestroy": 0,
                 "cuDeviceGetAttribute": 2 * ndev if kind == "fatbin" else 0}


def test_stock_mode_makes_every_driver_call(make_gpu_runtime, gpu):
    rt = make_gpu_runtime(disable=True)
    buf = blob_buffer(blob("kernels.fatbin"))
    data = Saxpy(gpu)
    for _ in range(20):
        llvm19_step(rt, buf, data.params)
    np.testing.assert_array_equal(data.result(), data.expected(20))
    assert [rt.count(k) for k in ["cuModuleLoadData", "cuModuleUnload", "cuStreamCreate",
                                  "cuStreamDestroy", "cuLibraryLoadData"]] == [20, 20, 20, 20, 0]


def test_reused_address_runs_the_new_code(make_gpu_runtime, gpu):
    rt = make_gpu_runtime()
    fat, cub = blob("kernels.fatbin"), blob("kernels.cubin")
    buf = blob_buffer(fat, max(len(fat), len(cub)))
    data = Saxpy(gpu)
    m1, _, _ = llvm19_step(rt, buf, data.params)
    overwrite(buf, cub)
    m2, _, _ = llvm19_step(rt, buf, data.params)
    assert m1 != m2
    np.testing.assert_array_equal(data.result(), data.expected(2))
    assert rt.count("cuModuleLoadData") == 2 and rt.count("cuModuleUnload") == 1


def test_dynamic_shared_memory_above_48k(make_gpu_runtime, gpu):
    rt = make_gpu_runtime()
    m = rt.mgpuModuleLoad(blob_buffer(blob("kernels.fatbin")), 0)
    f = rt.mgpuModuleGetFunction(m, b"fill_smem")
    ok(cu.cuCtxPushCurrent(gpu))
    out = ok(cu.cuMemAlloc(1024 * 4))
    ok(cu.cuCtxPopCurrent())
    pout, pn = ctypes.c_uint64(int(out)), ctypes.c_int(1024)
    params = (ctypes.c_void_p * 2)(ctypes.addressof(pout), ctypes.addressof(pn))
    s = rt.mgpuStreamCreate()
    for _ in range(10):
        rt.mgpuLaunchKernel(f, 4, 1, 1, 256, 1, 1, 96 * 1024, s, params, None, 2)
    rt.mgpuStreamSynchronize(s)
    host = np.empty(1024, dtype=np.float32)
    ok(cu.cuCtxPushCurrent(gpu))
    ok(cu.cuMemcpyDtoH(host, out, 1024 * 4))
    ok(cu.cuMemFree(out))
    ok(cu.cuCtxPopCurrent())
    np.testing.assert_array_equal(host, np.arange(1024, dtype=np.float32) + 1)
    # the shared-memory limit once, and each device's compute capability (major, minor) once at
    # the load of the fatbin (blob_state.h)
    ndev = ok(cu.cuDeviceGetCount())
    assert rt.count("cuFuncSetAttribute") == 1 and rt.count("cuDeviceGetAttribute") == 1 + 2 * ndev


def test_context_of_the_caller_is_preserved(make_gpu_runtime, gpu):
    rt = make_gpu_runtime()
    buf = blob_buffer(blob("kernels.fatbin"))
    data = Saxpy(gpu)
    seen = []

    def body(ctx):
        if ctx is not None:
            ok(cu.cuCtxSetCurrent(ctx))
        for _ in range(3):
            llvm19_step(rt, buf, data.params)
            p = rt.mgpuMemAlloc(64, None, True)
            rt.mgpuMemFree(p, None)
            seen.append(int(ok(cu.cuCtxGetCurrent())) == (int(ctx) if ctx is not None else 0))

    for ctx in [None, gpu]:  # a fresh thread has no context; another has the primary one current
        t = threading.Thread(target=body, args=(ctx,))
        t.start()
        t.join()
    assert seen == [True] * 6
    np.testing.assert_array_equal(data.result(), data.expected(6))


def test_streams_reused_and_never_shared_on_gpu(make_gpu_runtime, gpu):
    rt = make_gpu_runtime()
    pin = rt.lib.mgpu_cached_driver_handle
    pin.restype, pin.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
    live = [rt.mgpuStreamCreate() for _ in range(4)]
    assert len(set(live)) == 4 and rt.count("cuStreamCreate") == 4  # bound when made
    drivers = [pin(s) for s in live]
    assert len(set(drivers)) == 4
    for s in live:
        rt.mgpuStreamDestroy(s)
    again = {pin(rt.mgpuStreamCreate()) for _ in range(4)}
    # idle: reused (the oldest parked ones, each after a query, while more than one is parked:
    # streams/pool.c), never two handles on one driver stream
    assert len(again) == 4 and len(again & set(drivers)) >= 3
    assert rt.count("cuStreamCreate") == 4 + len(again - set(drivers))
    assert rt.count("cuStreamDestroy") == 0
    s0 = rt.mgpuStreamCreate()
    for _ in range(3):
        es = [rt.mgpuEventCreate() for _ in range(3)]
        for e in es:
            rt.mgpuEventRecord(e, s0)
            rt.mgpuEventSynchronize(e)
            rt.mgpuEventDestroy(e)
    # reused across the rounds (9 creates): at most those live at once (3), one made while one
    # other is parked, and one more (streams/pool.c: SPARE_DRAIN)
    assert 3 <= rt.count("cuEventCreate") <= 5


def _c_array(data: bytes) -> str:
    return ",".join(str(b) for b in data)


CTOR_PROGRAM = r"""
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
void *mgpuModuleLoad(void *, size_t); void mgpuModuleUnload(void *);
void *mgpuModuleGetFunction(void *, const char *);
void mgpuLaunchKernel(void *, intptr_t, intptr_t, intptr_t, intptr_t, intptr_t, intptr_t, int32_t,
                      void *, void **, void **, size_t);
void *mgpuStreamCreate(void); void mgpuStreamSynchronize(void *); void mgpuStreamDestroy(void *);
void *mgpuMemAlloc(uint64_t, void *, bool); void mgpuMemFree(void *, void *);
void mgpuMemcpy(void *, void *, size_t, void *); void mgpuSetDefaultDevice(int32_t);
static const unsigned char blob[] __attribute__((aligned(64))) = {BLOB};
static void *module;
/* As LLVM >= 21 emits: load in a global constructor (before main, before any device is chosen),
   unload in a global destructor (after main). */
__attribute__((constructor(123))) static void load(void) { module = mgpuModuleLoad((void *)blob, sizeof blob); }
__attribute__((destructor(123))) static void unload(void) { mgpuModuleUnload(module); }
int main(void) {
  enum { N = 4096 };
  static float x[N], y[N];
  for (int i = 0; i < N; ++i) { x[i] = (float)(i % 11); y[i] = 1.0f; }
  mgpuSetDefaultDevice(0);
  void *s = mgpuStreamCreate();
  float *dx = mgpuMemAlloc(sizeof x, s, false), *dy = mgpuMemAlloc(sizeof y, s, false);
  mgpuMemcpy(dx, x, sizeof x, s); mgpuMemcpy(dy, y, sizeof y, s);
  float a = 3.0f; int n = N; void *params[] = {&a, &dx, &dy, &n};
  for (int it = 0; it < 100; ++it) {
    void *f = mgpuModuleGetFunction(module, "saxpy");
    void *ls = mgpuStreamCreate();
    mgpuStreamSynchronize(s);
    mgpuLaunchKernel(f, N / 256, 1, 1, 256, 1, 1, 0, ls, params, 0, 4);
    mgpuStreamSynchronize(ls); mgpuStreamDestroy(ls);
  }
  mgpuMemcpy(y, dy, sizeof y, s); mgpuStreamSynchronize(s);
  for (int i = 0; i < N; ++i) if (y[i] != 1.0f + 300.0f * x[i]) { printf("wrong at %d\n", i); return 1; }
  mgpuMemFree(dx, s); mgpuMemFree(dy, s); mgpuStreamDestroy(s);
  printf("ok\n");
  return 0;
}
"""


@pytest.mark.parametrize("disable", [False, True], ids=["cached", "stock"])
def test_load_in_global_constructor_before_device_is_set(gpu, tmp_path, disable):
    if CC is None:
        pytest.skip("no C compiler")
    src = tmp_path / "ctor.c"
    src.write_text(CTOR_PROGRAM.replace("BLOB", _c_array(blob("kernels.fatbin"))))
    exe = tmp_path / "ctor"
    subprocess.run([CC, "-O1", "-o", str(exe), str(src), *mgpu_cached.ldflags_list()],
                   check=True)
    env = dict(os.environ, MGPU_CACHED_STATS_FILE=str(tmp_path / "stats.json"))
    env.pop("MGPU_CACHED_CUDA_DRIVER", None)
    env.pop("MGPU_CACHED_DISABLE", None)
    if disable:
        env["MGPU_CACHED_DISABLE"] = "1"
    p = subprocess.run([str(exe)], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout == "ok\n", p.stdout + p.stderr
    if not disable:
        assert p.stderr == ""  # in particular no unload failure at exit
        import json
        st = json.loads((tmp_path / "stats.json").read_text())["stats"]
        # s holds one driver stream; the per-launch streams take turns on two (a destroyed one is
        # reused once a later synchronisation found it idle: streams/pool.c)
        assert st["driver_module_loads"] == 1 and 2 <= st["driver_stream_creates"] <= 3


@pytest.mark.parametrize("llvm", [19, 22])
@pytest.mark.parametrize("program", ["empty_loop", "saxpy"])
@pytest.mark.parametrize("disable", [False, True], ids=["cached", "stock"])
def test_mlir_compiled_programs(gpu, tmp_path, program, llvm, disable):
    if CC is None:
        pytest.skip("no C compiler")
    exe = tmp_path / "prog"
    cmd = [CC, "-std=c11", "-o", str(exe), str(DATA / "mlir_harness.c"),
           str(DATA / "mlir" / f"{program}_llvm{llvm}.o"), *mgpu_cached.ldflags_list(), "-ldl"]
    if program == "saxpy":
        cmd.insert(2, "-DSAXPY")
    subprocess.run(cmd, check=True)
    env = dict(os.environ, MGPU_CACHED_STATS_FILE=str(tmp_path / "stats.json"))
    env.pop("MGPU_CACHED_CUDA_DRIVER", None)
    env.pop("MGPU_CACHED_DISABLE", None)
    if disable:
        env["MGPU_CACHED_DISABLE"] = "1"
    p = subprocess.run([str(exe), "500"], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stdout + p.stderr
    if not disable:
        assert p.stderr == ""
        import json
        st = json.loads((tmp_path / "stats.json").read_text())["stats"]
        assert st["driver_module_loads"] == 1 and st["launches"] == 500
        # driver handles: a destroyed stream is reused once a later synchronisation found it idle
        # (streams/pool.c): the per-launch streams take turns on two, beside any long-lived one
        assert 1 <= st["driver_stream_creates"] <= 3


def saxpy_on_a_stream(make_gpu_runtime, gpu):
    """A runtime, its saxpy function, a stream of it and the saxpy buffers (the graph tests)."""
    rt = make_gpu_runtime()
    buf = blob_buffer(blob("kernels.fatbin"))
    m = rt.mgpuModuleLoad(buf, len(buf))
    f = rt.mgpuModuleGetFunction(m, b"saxpy")
    rt.keep = buf  # the blob outlives the module
    return rt, f, rt.mgpuStreamCreate(), Saxpy(gpu)


@pytest.mark.parametrize("graph", ["0", "1"])
def test_graph_path_changing_arguments_matches_the_stream_path(make_gpu_runtime, gpu, graph,
                                                               monkeypatch):
    """Issue 12: saxpy with a new `a` each launch (five values in turn), argument storage reused,
    on one stream: the graph path computes what the stream path computes. The kernel is alone on
    its stream, so once the values repeat each gets an exec of its own (graph_launch.c, "Argument
    sets"): the first round and the first repeat update the node, then no launch does."""
    monkeypatch.setenv("MGPU_CACHED_GRAPH", graph)
    for k, v in GRAPH_EAGER.items():  # a kernel's exec at its second launch
        monkeypatch.setenv(k, v)
    rt, f, s, data = saxpy_on_a_stream(make_gpu_runtime, gpu)
    total = 0.0
    for i in range(200):
        data._a.value = float(i % 5)  # same storage, new value
        total += i % 5
        rt.mgpuLaunchKernel(f, N // 256, 1, 1, 256, 1, 1, 0, s, data.params, None, 4)
        if i % 50 == 49:
            rt.mgpuStreamSynchronize(s)
    rt.mgpuStreamSynchronize(s)
    np.testing.assert_array_equal(data.result(), data.y0 + total * data.x)
    if graph == "1":
        # the first launch takes the stream path (no exec yet), the second builds the exec
        assert rt.count("cuGraphLaunch") == 199 and rt.count("cuLaunchKernel") == 1
        assert rt.count("cuGraphExecKernelNodeSetParams") == 5
        assert rt.count("cuGraphInstantiate") == 5  # one exec per value of a
    else:
        assert rt.count("cuGraphLaunch") == 0 and rt.count("cuLaunchKernel") == 200
    rt.mgpuStreamDestroy(s)


@pytest.mark.parametrize("graph", ["0", "1"])
def test_graph_path_swapping_buffers_matches_the_stream_path(make_gpu_runtime, gpu, graph,
                                                             monkeypatch):
    """Issue 12: a step that swaps its buffers every launch (y += x, then x += y, ...): the graph
    path keeps one exec per argument set (no update after the third launch) and computes what the
    stream path computes."""
    monkeypatch.setenv("MGPU_CACHED_GRAPH", graph)
    for k, v in GRAPH_EAGER.items():  # a kernel's exec at its second launch
        monkeypatch.setenv(k, v)
    rt, f, s, data = saxpy_on_a_stream(make_gpu_runtime, gpu)
    swapped = (ctypes.c_void_p * 4)(*[ctypes.addressof(v) for v in
                                      (data._a, data._py, data._px, data._n)])
    x, y = data.x.copy(), data.y0.copy()
    for i in range(16):
        rt.mgpuLaunchKernel(f, N // 256, 1, 1, 256, 1, 1, 0, s, (data.params, swapped)[i % 2],
                            None, 4)
        if i % 2 == 0:
            y = y + x
        else:
            x = x + y
    rt.mgpuStreamSynchronize(s)
    ok(cu.cuCtxPushCurrent(gpu))
    got_x = np.empty(N, dtype=np.float32)
    ok(cu.cuMemcpyDtoH(got_x, data.dx, N * 4))
    ok(cu.cuCtxPopCurrent())
    np.testing.assert_array_equal(got_x, x)
    np.testing.assert_array_equal(data.result(), y)
    if graph == "1":
        assert rt.count("cuGraphLaunch") == 15 and rt.count("cuLaunchKernel") == 1  # the first
        assert rt.count("cuGraphInstantiate") == 2
        assert rt.count("cuGraphExecKernelNodeSetParams") == 1
    else:
        assert rt.count("cuGraphLaunch") == 0 and rt.count("cuLaunchKernel") == 16
    rt.mgpuStreamDestroy(s)


def _saxpy_chains(make_gpu_runtime, gpu, monkeypatch, chains, k, values):
    """Chain replay on (tagged handles, a kernel's exec at its second launch): `chains` chains of
    k saxpy launches + sync, launch i of chain c with a = (c + i) % values. The runtime, after its
    result was checked against launch by launch (y0 + the sum of every a, times x), and the stream
    (the caller destroys it after its counts)."""
    monkeypatch.setenv("MGPU_CACHED_GRAPH", "1")
    monkeypatch.setenv("MGPU_CACHED_CHAIN", "1")
    monkeypatch.setenv("MGPU_CACHED_STREAM_HANDLES", "tagged")  # chains defer on tagged handles only
    for key, v in GRAPH_EAGER.items():  # a kernel's exec at its second launch
        monkeypatch.setenv(key, v)
    rt = make_gpu_runtime()
    buf = blob_buffer(blob("kernels.fatbin"))
    m = rt.mgpuModuleLoad(buf, len(buf))
    f = rt.mgpuModuleGetFunction(m, b"saxpy")
    s = rt.mgpuStreamCreate()
    data = Saxpy(gpu)
    total = 0.0
    for chain in range(chains):
        for i in range(k):
            data._a.value = float((chain + i) % values)
            total += (chain + i) % values
            rt.mgpuLaunchKernel(f, N // 256, 1, 1, 256, 1, 1, 0, s, data.params, None, 4)
        rt.mgpuStreamSynchronize(s)
    np.testing.assert_array_equal(data.result(), data.y0 + total * data.x)
    return rt, s


def test_chain_replay_matches_the_stream_path(make_gpu_runtime, gpu, monkeypatch):
    """Issue 12, opt-in chain replay: chains of 3 saxpy launches + sync, replayed as one graph,
    arguments changing between chains: the same result as launch by launch."""
    rt, s = _saxpy_chains(make_gpu_runtime, gpu, monkeypatch, chains=20, k=3, values=4)
    assert rt.count("cuGraphInstantiate") >= 2  # the one-node exec and the chain graph
    # chain 1 by cuLaunchKernel (no one-node exec yet: made after it), chain 2 through the
    # one-node exec, then 18 replays of the chain graph
    assert rt.count("cuLaunchKernel") == 3 and rt.count("cuGraphLaunch") == 3 + 18
    rt.mgpuStreamDestroy(s)


def test_chain_replay_in_a_thread_with_no_context_current_pushes_none(make_gpu_runtime, gpu,
                                                                       monkeypatch):
    """Bare chain replay (context.h, chain.c): in a fresh thread (no context current), chains of
    10 saxpy launches with the same values each time; once the chain's graph exists, a chain and
    its sync make no push and no pop (the deferral and the replay's cuGraphLaunch run with none
    current, in the stream's context), and the result is that of launch by launch."""
    monkeypatch.setenv("MGPU_CACHED_GRAPH", "1")
    monkeypatch.setenv("MGPU_CACHED_CHAIN", "1")
    monkeypatch.setenv("MGPU_CACHED_STREAM_HANDLES", "tagged")
    for key, v in GRAPH_EAGER.items():
        monkeypatch.setenv(key, v)
    rt = make_gpu_runtime()
    buf = blob_buffer(blob("kernels.fatbin"))
    data = Saxpy(gpu)
    seen = {}

    def body():
        m = rt.mgpuModuleLoad(buf, len(buf))
        f = rt.mgpuModuleGetFunction(m, b"saxpy")
        s = rt.mgpuStreamCreate()

        def chain():
            for i in range(10):
                data._a.value = float(i % 3 + 1)
                rt.mgpuLaunchKernel(f, N // 256, 1, 1, 256, 1, 1, 0, s, data.params, None, 4)
            rt.mgpuStreamSynchronize(s)

        for _ in range(3):  # the one-node exec, the chain seen again, its graph made
            chain()
        rt.count.reset()
        for _ in range(3):
            chain()
        seen.update({c: rt.count(c) for c in ("cuCtxPushCurrent", "cuCtxPopCurrent",
                                              "cuGraphLaunch", "cuLaunchKernel",
                                              "cuGraphExecKernelNodeSetParams")})
        seen["current"] = int(ok(cu.cuCtxGetCurrent()))
        rt.mgpuStreamDestroy(s)

    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert seen == {"cuCtxPushCurrent": 0, "cuCtxPopCurrent": 0, "cuGraphLaunch": 3,
                    "cuLaunchKernel": 0, "cuGraphExecKernelNodeSetParams": 0, "current": 0}, seen
    a = sum(i % 3 + 1 for i in range(10))
    np.testing.assert_array_equal(data.result(), data.y0 + 6 * a * data.x)
    assert rt.info.stats()["chain_replays"] >= 3


def test_long_chains_with_a_head_start_match_the_stream_path(make_gpu_runtime, gpu, monkeypatch):
    """Issue 21 item 2, head start: chains of 100 saxpy launches + sync, arguments changing; from
    the second chain on, the first 16 launches are submitted at the 16th (chain.c), the next 32
    at the 48th, the rest at the sync. The result is that of launch by launch, and the driver
    calls are those counted (tests/test_chain_replay.py counts the same against the fake)."""
    rt, s = _saxpy_chains(make_gpu_runtime, gpu, monkeypatch, chains=6, k=100, values=3)
    # chain 1: one segment by cuLaunchKernel (the one-node exec is made after it); chain 2: three
    # parts (16, 32, 52) through the one-node exec; chain 3 the same (each part seen again: their
    # graphs made after); chains 4-6: three replays each
    assert rt.count("cuLaunchKernel") == 100
    assert rt.count("cuGraphLaunch") == 100 + 100 + 3 * 3
    assert rt.info.stats()["chain_heads"] == 5
    rt.mgpuStreamDestroy(s)
