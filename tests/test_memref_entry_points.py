# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The memref-descriptor entry points: mgpuMemHost(Un)RegisterMemRef and
mgpuTensorMapEncodeTiledMemref, in the cached and the stock mode, against the recording driver."""

import ctypes

import pytest

CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7  # 4-byte elements


def descriptor(rank: int, data, offset: int, sizes, strides):
    """A StridedMemRefType<T, rank> as the generated code passes it (by pointer)."""

    class Desc(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("data", ctypes.c_void_p),
                    ("offset", ctypes.c_int64), ("sizes", ctypes.c_int64 * rank),
                    ("strides", ctypes.c_int64 * rank)]

    d = Desc()
    d.base = d.data = ctypes.addressof(data)
    d.offset = offset
    d.sizes[:] = sizes
    d.strides[:] = strides
    return d


@pytest.mark.parametrize("disable", [False, True], ids=["cached", "stock"])
def test_host_register_memref_registers_the_dense_extent(make_runtime, disable):
    rt = make_runtime(disable=disable)
    host = (ctypes.c_float * 64)()
    d = descriptor(2, host, 2, [3, 4], [4, 1])
    start = ctypes.addressof(host) + 2 * 4  # aligned pointer + offset elements

    rt.mgpuMemHostRegisterMemRef(2, ctypes.byref(d), 4)
    assert rt.fake.count("cuMemHostRegister") == 1
    assert rt.fake.fake_registered_size(start) == 3 * 4 * 4

    rt.mgpuMemHostUnregisterMemRef(2, ctypes.byref(d), 4)
    assert rt.fake.count("cuMemHostUnregister") == 1
    assert rt.fake.fake_registered_size(start) == 0


def test_host_register_memref_bad_descriptor_reports_without_driver_call(rt, capfd):
    rt.mgpuMemHostRegisterMemRef(1, None, 4)
    host = (ctypes.c_float * 4)()
    d = descriptor(1, host, 0, [4], [1])
    rt.mgpuMemHostRegisterMemRef(-1, ctypes.byref(d), 4)
    rt.mgpuMemHostUnregisterMemRef(1, ctypes.byref(d), 0)
    err = capfd.readouterr().err
    assert "'mgpuMemHostRegisterMemRef' failed" in err
    assert "'mgpuMemHostUnregisterMemRef' failed" in err
    assert rt.fake.count("cuMemHostRegister") == 0
    assert rt.fake.count("cuMemHostUnregister") == 0
    assert rt.stats()["errors"] == 3


@pytest.mark.parametrize("disable", [False, True], ids=["cached", "stock"])
def test_tensor_map_memref_encodes_reversed_dims_and_byte_strides(make_runtime, disable):
    rt = make_runtime(disable=disable)
    host = (ctypes.c_float * (64 * 128))()
    d = descriptor(2, host, 0, [64, 128], [128, 1])
    box = (ctypes.c_int64 * 2)(16, 32)
    dmap = rt.mgpuTensorMapEncodeTiledMemref(2, ctypes.byref(d), CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                                             0, 0, 0, 0, box)
    assert dmap, "no device copy of the descriptor returned"
    # The fake driver's "device" memory is host memory; its encoding is documented in fakecuda.c.
    words = (ctypes.c_uint64 * 16).from_address(dmap)
    assert words[0] == CU_TENSOR_MAP_DATA_TYPE_FLOAT32
    assert words[1] == 2                                   # rank
    assert words[2] == ctypes.addressof(host)              # global address
    assert (words[3], words[4]) == (128, 64)               # innermost dimension first
    assert (words[8], words[9]) == (32, 16)                # box, innermost first
    assert words[13] == 128 * 4                            # outer stride in bytes
    assert rt.fake.count("cuTensorMapEncodeTiled") == 1
    assert rt.fake.count("cuMemAlloc") == 1
    assert rt.fake.count("cuMemcpy") == 1


def test_tensor_map_memref_rejects_bad_rank_without_driver_call(rt, capfd):
    host = (ctypes.c_float * 4)()
    d = descriptor(1, host, 0, [4], [1])
    box = (ctypes.c_int64 * 6)(1, 1, 1, 1, 1, 1)
    assert not rt.mgpuTensorMapEncodeTiledMemref(6, ctypes.byref(d), 7, 0, 0, 0, 0, box)
    assert not rt.mgpuTensorMapEncodeTiledMemref(1, ctypes.byref(d), 99, 0, 0, 0, 0, box)
    assert not rt.mgpuTensorMapEncodeTiledMemref(1, None, 7, 0, 0, 0, 0, box)
    assert "'mgpuTensorMapEncodeTiledMemref' failed" in capfd.readouterr().err
    assert rt.fake.count("cuTensorMapEncodeTiled") == 0
    assert rt.fake.count("cuMemAlloc") == 0
