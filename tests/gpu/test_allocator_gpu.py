"""The caching allocator on a real NVIDIA GPU: results computed into reused buffers, a block freed
while a (spinning) kernel still writes to it is not handed to another stream before the kernel
ends, host reads of reused host_shared memory, the cap, the switch back to the stock calls."""

import ctypes

import pytest

from conftest import DATA, blob_buffer
from gpu_support import countcuda_build, cu, gpu, make_gpu_runtime, ok  # noqa: F401 (fixtures)

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
    assert rt.count("cuMemAlloc") == 2 and rt.count("cuMemFree") == 0
    assert rt.info.stats()["alloc_hits"] == 78


def test_stream_ordered_reuse_without_host_sync(make_gpu_runtime, gpu):
    """Each step reuses the previous step's freed blocks on the same stream before its kernels
    have finished; every step's result is still right."""
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
    assert rt.count("cuMemAlloc") == 2
    assert rt.info.stats()["alloc_ordered_hits"] > 0
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
    # once the kernel has ended, its block comes back (last freed first: q, then p)
    again = {rt.mgpuMemAlloc(N * 4, None if host_shared else s2, host_shared) for _ in range(2)}
    assert again == {p, q}
    assert rt.count("cuMemAllocManaged" if host_shared else "cuMemAlloc") == 2
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
    assert rt.count("cuMemAllocManaged") == 2 and rt.count("cuMemFree") == 0


def test_cap_holds_and_release_frees(make_gpu_runtime, gpu, monkeypatch):
    monkeypatch.setenv("MGPU_CACHED_ALLOCATOR_CACHE_BYTES", "4M")
    rt = make_gpu_runtime()
    ps = [rt.mgpuMemAlloc(MIB, None, False) for _ in range(8)]
    for p in ps:
        rt.mgpuMemFree(p, None)
    st = rt.info.stats()
    assert st["alloc_bytes_cached"] == 4 * MIB and rt.count("cuMemFree") == 4
    assert rt.info.allocator_release() == 4 and rt.count("cuMemFree") == 8


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
