# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Bad input and missing drivers: a clear message in the stock style, no crash, no corrupted cache."""

import ctypes

from conftest import blob_buffer, ptx


def test_null_blob(rt, capfd):
    assert rt.mgpuModuleLoad(None, 0) is None
    assert rt.mgpuModuleLoadJIT(None, 2, 0) is None
    err = capfd.readouterr().err
    assert "'mgpuModuleLoad' failed with 'MGPU_CACHED_NULL_ARGUMENT'" in err
    assert "'mgpuModuleLoadJIT' failed with 'MGPU_CACHED_NULL_ARGUMENT'" in err
    assert rt.fake.count("cuModuleLoadData") == 0


def test_garbage_blob_then_good_blob(rt, capfd):
    bad = blob_buffer(b"BAD blob, not a GPU binary\0")
    assert rt.mgpuModuleLoad(bad, 0) is None
    assert rt.mgpuModuleLoad(bad, 0) is None  # a failed load is not cached
    assert "'cuModuleLoadData' failed with 'CUDA_ERROR_INVALID_IMAGE'" in capfd.readouterr().err
    assert rt.fake.count("cuModuleLoadData") == 2
    binary = blob_buffer(b"\x01\x02\x03 not text either\0")
    assert rt.mgpuModuleLoad(binary, 0) is None
    good = blob_buffer(ptx("k"))
    m = rt.mgpuModuleLoad(good, 0)
    assert m and rt.mgpuModuleGetFunction(m, b"k")
    assert rt.mgpuModuleLoad(good, 0) == m


def test_unknown_kernel_name(rt, capfd):
    m = rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0)
    assert rt.mgpuModuleGetFunction(m, b"no_such_kernel") is None
    assert "'cuModuleGetFunction' failed with 'CUDA_ERROR_NOT_FOUND'" in capfd.readouterr().err
    assert rt.mgpuModuleGetFunction(m, None) is None
    assert rt.mgpuModuleGetFunction(m, b"k")  # still fine


def test_handles_the_library_did_not_make(rt, capfd):
    junk = ctypes.create_string_buffer(b"\xff" * 256)  # readable memory that is no handle
    assert rt.mgpuModuleGetFunction(junk, b"k") is None
    assert rt.mgpuModuleGetFunction(0x10, b"k") is None  # not even readable: never dereferenced
    rt.mgpuModuleUnload(0x10)
    rt.launch(0x10)
    rt.launch(None)
    err = capfd.readouterr().err
    assert err.count("'mgpuModuleGetFunction' failed with 'MGPU_CACHED_UNKNOWN_HANDLE'") == 2
    assert "'mgpuModuleUnload' failed with 'MGPU_CACHED_UNKNOWN_HANDLE'" in err
    assert "'mgpuLaunchKernel' failed with 'MGPU_CACHED_UNKNOWN_HANDLE'" in err
    # a NULL function: as stock, the driver's own answer to cuLaunchKernel(NULL, ...)
    assert "'cuLaunchKernel' failed with 'CUDA_ERROR_INVALID_HANDLE'" in err
    assert rt.fake.count("cuLaunchKernel") == 1  # the NULL one only: junk never reaches the driver


def test_double_unload_is_reported(rt, capfd):
    buf = blob_buffer(ptx("k"))
    m = rt.mgpuModuleLoad(buf, 0)
    rt.mgpuModuleUnload(m)
    rt.mgpuModuleUnload(m)
    assert "'mgpuModuleUnload' failed with 'MGPU_CACHED_STALE_HANDLE'" in capfd.readouterr().err
    assert rt.mgpuModuleLoad(buf, 0) == m  # the cache still serves it


def test_driver_errors_are_reported_once_per_call(rt, capfd):
    f = rt.mgpuModuleGetFunction(rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0), b"k")
    rt.fake.fake_fail(b"cuLaunchKernel", 700, 0)
    rt.launch(f)
    assert capfd.readouterr().err == "'cuLaunchKernel' failed with 'CUDA_ERROR_ILLEGAL_ADDRESS'\n"
    assert rt.fake.count("cuLaunchKernel") == 1  # reported, not retried
    assert rt.stats()["errors"] == 1


def test_invalid_default_device(rt, capfd):
    rt.mgpuSetDefaultDevice(7)
    assert rt.mgpuStreamCreate() is None
    assert "'cuDeviceGet' failed with 'MGPU_CACHED_INVALID_DEVICE'" in capfd.readouterr().err
    rt.mgpuSetDefaultDevice(0)
    assert rt.mgpuStreamCreate()


def test_no_driver_on_the_machine(make_runtime, capfd):
    rt = make_runtime(driver="/nonexistent/libcuda.so.1")
    assert rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0) is None
    assert rt.mgpuStreamCreate() is None
    rt.mgpuStreamSynchronize(None)
    err = capfd.readouterr().err
    assert err.count("cannot load the CUDA driver '/nonexistent/libcuda.so.1'") == 1
    assert "MGPU_CACHED_NO_DRIVER" in err
    assert "cannot load the CUDA driver" in rt.info.driver_error()


def test_no_driver_in_stock_mode(make_runtime, capfd):
    rt = make_runtime(driver="/nonexistent/libcuda.so.1", disable=True)
    assert rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0) is None
    assert rt.mgpuStreamCreate() is None
    assert capfd.readouterr().err.count("cannot load the CUDA driver") == 1
