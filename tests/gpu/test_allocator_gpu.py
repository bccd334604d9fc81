# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The caching allocator on a real NVIDIA GPU: results computed into reused buffers, a block freed
while a (spinning) kernel still writes to it is not handed out before the kernel ends, stream-ordered
reuse behind its switch, reused blocks that read as zeros (and the opt-out), host reads of reused
host_shared memory, the cap, the switch back to the stock calls."""

import ctypes
import os
import subprocess
import time

import pytest

import mgpu_cached
from conftest import CC, DATA, ROOT, blob_buffer
from gpu_support import countcuda_build, cu, gpu, make_gpu_runtime, ok  # noqa: F401 (fixtures)


def allocs(rt):
    """Device blocks the driver made: cuMemAlloc, or the library's memory pool (issue 19)."""
    return rt.count("cuMemAlloc") + rt.count("cuMemAllocFromPoolAsync")


def frees(rt):
    """Device blocks given back: cuMemFree, or to the pool (cuMemFreeAsync, then a trim)."""
    return rt.count("cuMemFree") + rt.count("cuMemFreeAsync")

if cu is None:
    pytest.skip("GPU tests need cuda-python (pip install cuda-python) and an NVIDIA GPU",
                allow_module_level=True)
np = pytest.importorskip("numpy", reason="GPU tests need numpy")

N = 1 << 16
MIB = 1 << 20


class Kernels:
    """spin_write and axpy from tests/data/alloc_kernels.cu, launched through the runtime."""

    def __init__(self, rt):
        self.rt = rt
        self.buf = blob_buffer((DATA / "alloc_kernels.fatbin").read_bytes())
        m = rt.mgpuModuleLoad(self.buf, len(self.buf))
        self.spin = rt.mgpuModuleGetFunction(m, b"spin_write")
        self.axpy_fn = rt.mgpuModuleGetFunction(m, b"axpy")
        self._keep = []

    def _launch(self, fn, stream, *args):
        self._keep.append(args)
        params = (ctypes.c_void_p * len(args))(*[ctypes.addressof(a) for a in args])
        self._keep.append(params)
        self.rt.mgpuLaunchKernel(fn, 64, 1, 1, 256, 1, 1, 0, stream, params, None, len(args))

    def axpy(self, a, x, y, n, stream):
        self._launch(self.axpy_fn, stream, ctypes.c_float(a), ctypes.c_uint64(x),
                     ctypes.c_uint64(y), ctypes.c_int(n))

    def spin_write(self, flag, out, n, value, stream, max_rounds=3_000_000):
        self._launch(self.spin, stream, ctypes.c_uint64(flag), ctypes.c_uint64(out),
                     ctypes.c_int(n), ctypes.c_int(value), ctypes.c_longlong(max_rounds))


def host_view(ptr, n, dtype=np.float32):
    ctype = ctypes.c_float if dtype == np.float32 else ctypes.c_int32
    return np.ctypeslib.as_array((ctype * n).from_address(ptr))


def settle(rt):
    """Wait until the reclaimer has cleared every block freed on a stream (a guard against hangs,
    not a timing assertion)."""
    deadline = time.monotonic() + 60
    while rt.info.stats()["alloc_bytes_pending"]:
        assert time.monotonic() < deadline, "the reclaimer did not finish"
        time.sleep(0.0005)


def copy_out(rt, ptr, n, stream, dtype=np.float32):
    out = np.empty(n, dtype=dtype)
    rt.mgpuMemcpy(out.ctypes.data, ptr, n * 4, stream)
    rt.mgpuStreamSynchronize(stream)
    return out


def test_results_computed_into_reused_buffers(make_gpu_runtime, gpu):
    rt = make_gpu_runtime()
    k = Kernels(rt)
    streams = [rt.mgpuStreamCreate(), rt.mgpuStreamCreate()]
    for i in range(40):
        s = streams[i % 2]
        x, y = rt.mgpuMemAlloc(N * 4, s, False), rt.mgpuMemAlloc(N * 4, s, False)
        hx = (np.arange(N) % (i + 3)).astype(np.float32)
        hy = np.full(N, float(i), dtype=np.float32)
        rt.mgpuMemcpy(x, hx.ctypes.data, N * 4, s)
        rt.mgpuMemcpy(y, hy.ctypes.data, N * 4, s)
        k.axpy(2.0, x, y, N, s)
        np.testing.assert_array_equal(copy_out(rt, y, N, s), 2 * hx + hy)
        rt.mgpuMemFree(x, s)
        rt.mgpuMemFree(y, s)
        settle(rt)
    assert allocs(rt) == 2 and frees(rt) == 0
    assert rt.info.stats()["alloc_hits"] == 78


@pytest.mark.parametrize("ordered", [False, True], ids=["default", "ORDERED=1"])
def test_reuse_without_host_sync(make_gpu_runtime, gpu, monkeypatch, ordered):
    """Steps that free their blocks on a stream the host never waits for. With
    MGPU_CACHED_ALLOCATOR_ORDERED=1 a step reuses the previous step's blocks on the same stream
    before its kernels have finished (cleared on the stream); by default only once the reclaimer's
    device-wide wait has passed. Every step's result is right either way."""
    if ordered:
        monkeypatch.setenv("MGPU_CACHED_ALLOCATOR_ORDERED", "1")
    rt = make_gpu_runtime()
    k = Kernels(rt)
    s = rt.mgpuStreamCreate()
    ok(cu.cuCtxPushCurrent(gpu))
    pinned = ok(cu.cuMemHostAlloc(30 * N * 4, 0))  # pinned: copies stay asynchronous
    ok(cu.cuCtxPopCurrent())
    outs = np.ctypeslib.as_array((ctypes.c_float * (30 * N)).from_address(int(pinned)))
    outs = outs.reshape(30, N)
    hx = (np.arange(N) % 5).astype(np.float32)
    for i in range(30):
        x, y = rt.mgpuMemAlloc(N * 4, s, False), rt.mgpuMemAlloc(N * 4, s, False)
        rt.mgpuMemcpy(x, hx.ctypes.data, N * 4, s)
        rt.mgpuMemset32(y, np.float32(i).view(np.uint32).item(), N, s)
        for _ in range(20):
            k.axpy(1.0, x, y, N, s)
        rt.mgpuMemcpy(outs[i].ctypes.data, y, N * 4, s)
        rt.mgpuMemFree(x, s)
        rt.mgpuMemFree(y, s)
    rt.mgpuStreamSynchronize(s)
    for i in range(30):
        np.testing.assert_array_equal(outs[i], i + 20 * hx)
    st = rt.info.stats()
    assert (st["alloc_ordered_hits"] > 0) == ordered
    assert st["alloc_hits"] + st["alloc_misses"] == 60 and allocs(rt) == st["alloc_misses"]
    ok(cu.cuCtxPushCurrent(gpu))
    ok(cu.cuMemFreeHost(pinned))
    ok(cu.cuCtxPopCurrent())


@pytest.mark.parametrize("host_shared", [False, True])
def test_block_in_use_is_not_handed_to_another_stream(make_gpu_runtime, gpu, host_shared):
    rt = make_gpu_runtime()
    k = Kernels(rt)
    s1, s2 = rt.mgpuStreamCreate(), rt.mgpuStreamCreate()
    ok(cu.cuCtxPushCurrent(gpu))
    flag_host = ok(cu.cuMemHostAlloc(4, getattr(cu, "CU_MEMHOSTALLOC_DEVICEMAP", 2)))
    flag_dev = ok(cu.cuMemHostGetDevicePointer(flag_host, 0))
    ok(cu.cuCtxPopCurrent())
    flag = ctypes.c_int.from_address(int(flag_host))
    flag.value = 0
    p = rt.mgpuMemAlloc(N * 4, None if host_shared else s1, host_shared)
    k.spin_write(int(flag_dev), p, N, 1, s1)  # keeps writing 1s into p until released
    rt.mgpuMemFree(p, s1)
    q = rt.mgpuMemAlloc(N * 4, None if host_shared else s2, host_shared)
    # s1 is the library's handle, not a driver stream (pool.h): ask through its driver stream
    drv = rt.lib.mgpu_cached_driver_handle
    drv.restype, drv.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
    still_running = cu.cuStreamQuery(cu.CUstream(drv(s1)))[0] == cu.CUresult.CUDA_ERROR_NOT_READY
    rt.mgpuMemset32(q, 7, N, s2)
    rt.mgpuStreamSynchronize(s2)
    flag.value = 1  # release the spin kernel
    rt.mgpuStreamSynchronize(s1)
    assert still_running, "the spin kernel ended before the allocation: test proves nothing"
    assert q != p
    got = host_view(q, N, np.int32) if host_shared else copy_out(rt, q, N, s2, np.int32)
    np.testing.assert_array_equal(got, np.full(N, 7, dtype=np.int32))  # never overwritten
    rt.mgpuMemFree(q, s2)
    rt.mgpuStreamSynchronize(s2)
    settle(rt)
    # once the kernel has ended, its block comes back
    again = {rt.mgpuMemAlloc(N * 4, None if host_shared else s2, host_shared) for _ in range(2)}
    assert again == {p, q}
    assert (rt.count("cuMemAllocManaged") if host_shared else allocs(rt)) == 2
    ok(cu.cuCtxPushCurrent(gpu))
    ok(cu.cuMemFreeHost(flag_host))
    ok(cu.cuCtxPopCurrent())


def test_host_reads_of_reused_host_shared_memory(make_gpu_runtime, gpu):
    rt = make_gpu_runtime()
    k = Kernels(rt)
    s = rt.mgpuStreamCreate()
    for i in range(30):
        x, y = rt.mgpuMemAlloc(N * 4, None, True), rt.mgpuMemAlloc(N * 4, None, True)
        hx, hy = host_view(x, N), host_view(y, N)
        hx[:] = np.arange(N) % (i + 2)
        hy[:] = i
        k.axpy(3.0, x, y, N, s)
        rt.mgpuStreamSynchronize(s)
        np.testing.assert_array_equal(hy, 3 * (np.arange(N) % (i + 2)) + i)
        rt.mgpuMemFree(x, s)
        rt.mgpuMemFree(y, s)
        settle(rt)
    assert rt.count("cuMemAllocManaged") == 2 and rt.count("cuMemFree") == 0


@pytest.mark.parametrize("host_shared", [False, True], ids=["device", "host_shared"])
@pytest.mark.parametrize("free_on", ["NULL", "stream"])
@pytest.mark.parametrize("zero", [True, False], ids=["zeroed", "ZERO=0"])
def test_reused_block_reads_as_fresh_memory(make_gpu_runtime, gpu, monkeypatch, host_shared,
                                            free_on, zero):
    """Fresh driver memory reads as zeros; so does a reused block (the review's exp3/exp4), unless
    MGPU_CACHED_ALLOCATOR_ZERO=0, where the old 0x55 bytes stay (so the test can fail)."""
    if not zero:
        monkeypatch.setenv("MGPU_CACHED_ALLOCATOR_ZERO", "0")
    rt = make_gpu_runtime()
    s = rt.mgpuStreamCreate()
    n = 4 * MIB // 4
    p = rt.mgpuMemAlloc(4 * MIB, None, host_shared)
    rt.mgpuMemset32(p, 0x55555555, n, s)
    rt.mgpuStreamSynchronize(s)
    rt.mgpuMemFree(p, None if free_on == "NULL" else s)
    settle(rt)
    q = rt.mgpuMemAlloc(4 * MIB, None, host_shared)
    assert q == p
    got = host_view(q, n, np.int32) if host_shared else copy_out(rt, q, n, s, np.int32)
    want = 0 if zero else 0x55555555
    assert int(np.count_nonzero(got != want)) == 0
    assert rt.info.stats()["alloc_bytes_zeroed"] == (4 * MIB if zero else 0)


def test_cap_holds_and_release_frees(make_gpu_runtime, gpu, monkeypatch):
    monkeypatch.setenv("MGPU_CACHED_ALLOCATOR_CACHE_BYTES", "4M")
    # 1 MiB device blocks on the NULL stream are stock's pair by default: cache every size
    monkeypatch.setenv("MGPU_CACHED_ALLOCATOR_SYNC_DIRECT_MAX", "0")
    rt = make_gpu_runtime()
    ps = [rt.mgpuMemAlloc(MIB, None, False) for _ in range(8)]
    for p in ps:
        rt.mgpuMemFree(p, None)
    st = rt.info.stats()
    assert st["alloc_bytes_cached"] == 4 * MIB and frees(rt) == 4
    assert rt.info.allocator_release() == 4 and frees(rt) == 8


def test_switch_restores_stock_calls(make_gpu_runtime, gpu, monkeypatch):
    monkeypatch.setenv("MGPU_CACHED_ALLOCATOR", "0")
    rt = make_gpu_runtime()
    k = Kernels(rt)
    s = rt.mgpuStreamCreate()
    for i in range(5):
        x, y = rt.mgpuMemAlloc(N * 4, None, True), rt.mgpuMemAlloc(N * 4, None, True)
        host_view(x, N)[:] = 1
        host_view(y, N)[:] = i
        k.axpy(2.0, x, y, N, s)
        rt.mgpuStreamSynchronize(s)
        np.testing.assert_array_equal(host_view(y, N), np.full(N, 2 + i, dtype=np.float32))
        rt.mgpuMemFree(x, s)
        rt.mgpuMemFree(y, s)
    assert rt.count("cuMemAllocManaged") == 10 and rt.count("cuMemFree") == 10


def test_exit_while_the_reclaimer_waits_for_a_kernel(gpu, tmp_path):
    """main returns while the reclaimer sits in cuCtxSynchronize behind a running kernel
    (tests/data/alloc/gpu_exit.c): the process exits normally."""
    if CC is None:
        pytest.skip("no C compiler")
    exe = tmp_path / "gpu_exit"
    subprocess.run([CC, "-std=c11", "-D_GNU_SOURCE", "-O1", f"-I{ROOT / 'csrc'}", "-o", str(exe),
                    str(DATA / "alloc" / "gpu_exit.c"), *mgpu_cached.ldflags().split()],
                   check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MGPU_CACHED")}
    env["MGPU_CACHED_STATS"] = "1"
    p = subprocess.run([str(exe), str(DATA / "alloc_kernels.fatbin"), "300000"], env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.split() == ["exiting"], (p.returncode, p.stdout,
                                                                   p.stderr[-2000:])
    assert "alloc_reclaims" in p.stderr  # the statistics were printed at exit


def test_small_null_stream_blocks_are_the_stock_pair(make_gpu_runtime, gpu, capfd):
    """Device blocks of at most 1 MiB allocated on the NULL stream are the stock cuMemAlloc /
    cuMemFree (MGPU_CACHED_ALLOCATOR_SYNC_DIRECT_MAX) and results computed in them are right; the
    free enters no context, as stock's (here no context is current; then from a thread of its
    own) and the driver reports nothing; one byte more and the block is cached."""
    import threading
    rt = make_gpu_runtime()
    k = Kernels(rt)
    s = rt.mgpuStreamCreate()
    n = 256 * 1024  # 1 MiB of floats
    for i in range(4):
        x, y = rt.mgpuMemAlloc(n * 4, None, False), rt.mgpuMemAlloc(n * 4, None, False)
        rt.mgpuMemset32(x, 0x3F800000, n, s)  # 1.0f
        rt.mgpuMemset32(y, 0, n, s)
        k.axpy(float(i), x, y, n, s)
        np.testing.assert_array_equal(copy_out(rt, y, n, s), np.full(n, i, dtype=np.float32))
        rt.mgpuMemFree(x, None)
        rt.mgpuMemFree(y, None)
    p = rt.mgpuMemAlloc(n * 4, None, False)
    t = threading.Thread(target=rt.mgpuMemFree, args=(p, None))
    t.start()
    t.join()
    assert rt.count("cuMemAlloc") == 9 and rt.count("cuMemFree") == 9
    st = rt.info.stats()
    assert st["alloc_sync_direct"] == 9 and st["alloc_hits"] == 0 and st["alloc_misses"] == 0
    assert "failed with" not in capfd.readouterr().err
    for _ in range(3):
        rt.mgpuMemFree(rt.mgpuMemAlloc(n * 4 + 1, None, False), None)
    st = rt.info.stats()
    # cached: no cuMemFree; two blocks at most take turns while one's clearing runs (allocator.md)
    assert rt.count("cuMemFree") == 9 and allocs(rt) - 9 in (1, 2)
    assert st["alloc_sync_direct"] == 9 and st["alloc_hits"] + st["alloc_misses"] == 3
