# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""GPU fixtures: skip cleanly without cuda-python, a driver or a GPU; count driver calls on the GPU
with the counting driver (tests/drivers/countcuda.c) in front of the real libcuda."""

import ctypes
import itertools
import shutil

import pytest

import mgpu_cached
from conftest import DRIVERS, bind, compile_shared

try:
    from cuda.bindings import driver as cu
except ImportError:  # pragma: no cover - depends on the machine
    cu = None

_n = itertools.count()


def ok(result):
    """Unwrap a cuda-python (err, *values) tuple, failing the test on an error."""
    err, *values = result if isinstance(result, tuple) else (result,)
    assert err == cu.CUresult.CUDA_SUCCESS, err
    return values[0] if len(values) == 1 else values


@pytest.fixture(scope="session")
def gpu():
    if cu is None:
        pytest.skip("GPU tests need cuda-python (pip install cuda-python)")
    err, = cu.cuInit(0)
    if err != cu.CUresult.CUDA_SUCCESS:
        pytest.skip(f"no usable NVIDIA driver (cuInit: {err.name})")
    count = ok(cu.cuDeviceGetCount())
    if count < 1:
        pytest.skip("no NVIDIA GPU")
    dev = ok(cu.cuDeviceGet(0))
    ctx = ok(cu.cuDevicePrimaryCtxRetain(dev))
    return ctx


@pytest.fixture(scope="session")
def countcuda_build(tmp_path_factory):
    return compile_shared(DRIVERS / "countcuda.c", tmp_path_factory.mktemp("count") / "libcount.so")


class Counter:
    def __init__(self, path):
        self.lib = ctypes.CDLL(str(path))
        self.lib.countcuda_count.restype = ctypes.c_long
        self.lib.countcuda_count.argtypes = [ctypes.c_char_p]

    def __call__(self, field):
        n = self.lib.countcuda_count(field.encode())
        assert n >= 0, field
        return n

    def reset(self):
        self.lib.countcuda_reset()


class GpuRt:
    def __init__(self, lib_path, count_path):
        self.count = Counter(count_path)
        self.lib = bind(ctypes.CDLL(str(lib_path)))
        self.info = mgpu_cached.Runtime(lib_path)

    def __getattr__(self, name):
        return getattr(self.lib, name)


@pytest.fixture
def make_gpu_runtime(gpu, tmp_path, monkeypatch, countcuda_build):
    def make(disable=False):
        n = next(_n)
        lib = tmp_path / f"libmgpu_cached_{n}.so"
        shutil.copyfile(mgpu_cached.library_path(), lib)
        counter = tmp_path / f"libcount_{n}.so"
        shutil.copyfile(countcuda_build, counter)
        monkeypatch.setenv("MGPU_CACHED_CUDA_DRIVER", str(counter))
        if disable:
            monkeypatch.setenv("MGPU_CACHED_DISABLE", "1")
        else:
            monkeypatch.delenv("MGPU_CACHED_DISABLE", raising=False)
        return GpuRt(lib, counter)
    return make
