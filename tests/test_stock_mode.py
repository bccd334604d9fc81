# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""MGPU_CACHED_DISABLE=1: every call makes the stock wrapper's driver calls, in its order."""

import ctypes

from conftest import blob_buffer, ptx

INIT = ["cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain"]


def test_llvm19_launch_sequence(make_runtime):
    rt = make_runtime(disable=True)
    assert not rt.info.enabled
    buf = blob_buffer(ptx("k"))
    for i in range(3):
        m = rt.mgpuModuleLoad(buf, 0)
        f = rt.mgpuModuleGetFunction(m, b"k")
        s = rt.mgpuStreamCreate()
        rt.launch(f, stream=s)
        rt.mgpuStreamSynchronize(s)
        rt.mgpuStreamDestroy(s)
        rt.mgpuModuleUnload(m)
    per_launch = ["cuCtxPushCurrent", "cuModuleLoadData", "cuCtxPopCurrent", "cuModuleGetFunction",
                  "cuCtxPushCurrent", "cuStreamCreate", "cuCtxPopCurrent",
                  "cuCtxPushCurrent", "cuLaunchKernel", "cuCtxPopCurrent",
                  "cuStreamSynchronize", "cuStreamDestroy", "cuModuleUnload"]
    assert rt.fake.log() == INIT + per_launch * 3
    assert rt.stats()["module_loads"] == 0  # the cache is not involved at all


def test_smem_launch_queries_every_time(make_runtime):
    rt = make_runtime(disable=True)
    m = rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0)
    f = rt.mgpuModuleGetFunction(m, b"k")
    rt.fake.fake_reset()
    rt.launch(f, smem=1024)
    rt.launch(f, smem=1024)
    assert rt.fake.log() == ["cuCtxPushCurrent", "cuDeviceGet", "cuDeviceGet",
                             "cuDeviceGetAttribute", "cuFuncSetAttribute", "cuLaunchKernel",
                             "cuCtxPopCurrent"] * 2


def test_memory_calls(make_runtime):
    rt = make_runtime(disable=True)
    s = rt.mgpuStreamCreate()
    p = rt.mgpuMemAlloc(256, None, True)
    q = rt.mgpuMemAlloc(256, None, False)
    assert rt.mgpuMemAlloc(0, None, False) is None
    rt.mgpuMemset32(p, 0x01020304, 64, s)
    rt.mgpuMemcpy(q, p, 256, s)
    assert ctypes.cast(q, ctypes.POINTER(ctypes.c_uint32))[63] == 0x01020304
    rt.mgpuMemFree(p, None)
    rt.mgpuMemFree(q, None)
    assert rt.fake.log() == INIT + [
        "cuCtxPushCurrent", "cuStreamCreate", "cuCtxPopCurrent",
        "cuCtxPushCurrent", "cuMemAllocManaged", "cuCtxPopCurrent",
        "cuCtxPushCurrent", "cuMemAlloc", "cuCtxPopCurrent",
        "cuCtxPushCurrent", "cuCtxPopCurrent",
        "cuMemsetD32Async", "cuMemcpyAsync", "cuMemFree", "cuMemFree"]


def test_context_frozen_at_first_use(make_runtime):
    """The stock wrapper's known multi-GPU bug, reproduced on purpose in stock mode."""
    rt = make_runtime(devices=2, disable=True)
    s0 = rt.mgpuStreamCreate()
    rt.mgpuSetDefaultDevice(1)
    s1 = rt.mgpuStreamCreate()
    assert rt.fake.fake_stream_device(s0) == rt.fake.fake_stream_device(s1) == 0


def test_errors_read_like_the_stock_ones(make_runtime, capfd):
    rt = make_runtime(disable=True)
    assert rt.mgpuModuleLoad(blob_buffer(b"BAD\0"), 0) is None
    rt.mgpuMemset32(None, 0, 4, None)  # no context current, NULL stream
    err = capfd.readouterr().err.splitlines()
    assert err == ["'cuModuleLoadData(&module, data)' failed with 'CUDA_ERROR_INVALID_IMAGE'",
                   "'cuMemsetD32Async(dst, value, count, stream)' failed with "
                   "'CUDA_ERROR_INVALID_CONTEXT'"]


def test_corrupt_header_goes_to_the_driver_in_stock_mode(make_runtime, capfd):
    """Stock behaviour hands any bytes to cuModuleLoadData, whose verdict is reported."""
    import struct
    rt = make_runtime(disable=True)
    data = struct.pack("<IHHQ", 0xBA55ED50, 1, 16, 1 << 30)  # a fatbin claiming 1 GiB
    assert rt.mgpuModuleLoad(blob_buffer(data), 0) is None
    assert "'cuModuleLoadData(&module, data)' failed with 'CUDA_ERROR_INVALID_IMAGE'" in \
        capfd.readouterr().err
