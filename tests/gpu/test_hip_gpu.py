# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""mgpu-cached on a real AMD GPU through its HIP backend: the committed gfx942 code object
(tests/data/rocm/saxpy_gfx942.hsaco) loaded, launched and its results checked, HIP call counts
through a counting shim (tests/drivers/counthip.c) in front of the real libamdhip64.so, stream
reuse, the stock ROCm behaviour, and the MLIR programs lowered for ROCm.

Needs hip-python (``pip install hip-python``), numpy, the HIP runtime and an AMD GPU of the code
object's architecture (gfx942, e.g. MI300X; rebuild the objects with
``GPU_CHIP=gfxNNN benchmarks/mlir/compile_rocm.sh`` for another one). Skips with the reason
otherwise. Not run in this project's CI or on its NVIDIA test machine: no AMD GPU was available.
"""

import ctypes
import itertools
import os
import shutil
import subprocess

import pytest

import mgpu_cached
from conftest import CC, DATA, DRIVERS, Rt, bind, blob_buffer, compile_shared  # noqa: F401

try:
    from hip import hip
except ImportError:  # pragma: no cover - depends on the machine
    hip = None

if hip is None:
    pytest.skip("AMD GPU tests need hip-python (pip install hip-python), the HIP runtime and an "
                "AMD GPU", allow_module_level=True)
np = pytest.importorskip("numpy", reason="AMD GPU tests need numpy")

ARCH = "gfx942"
N = 1024  # saxpy_kernel works on memref<1024xf32>, 4 blocks x 256 threads
_n = itertools.count()


def ok(result):
    """Unwrap a hip-python (err, *values) tuple, failing the test on an error."""
    err, *values = result if isinstance(result, tuple) else (result,)
    assert err == hip.hipError_t.hipSuccess, err
    return values[0] if len(values) == 1 else values


@pytest.fixture(scope="session")
def amd_gpu():
    err, count = hip.hipGetDeviceCount()
    if err != hip.hipError_t.hipSuccess or count < 1:
        pytest.skip(f"no AMD GPU (hipGetDeviceCount: {err})")
    props = ok(hip.hipGetDeviceProperties(0))
    arch = props.gcnArchName.decode() if isinstance(props.gcnArchName, bytes) else str(
        props.gcnArchName)
    if not arch.startswith(ARCH):
        pytest.skip(f"the committed code object is for {ARCH}; this GPU is {arch}")
    return 0


@pytest.fixture(scope="session")
def counthip_build(tmp_path_factory):
    return compile_shared(DRIVERS / "counthip.c", tmp_path_factory.mktemp("count") / "libcounthip.so")


class Counter:
    def __init__(self, path):
        self.lib = ctypes.CDLL(str(path))
        self.lib.counthip_count.restype = ctypes.c_long
        self.lib.counthip_count.argtypes = [ctypes.c_char_p]

    def __call__(self, name):
        n = self.lib.counthip_count(name.encode())
        assert n >= 0, name
        return n


class AmdRt:
    """A fresh copy of the runtime on the HIP backend, counting its HIP calls."""

    def __init__(self, tmp_path, counthip, monkeypatch, disable=False):
        n = next(_n)
        lib = tmp_path / f"libmgpu_cached_amd_{n}.so"
        shutil.copyfile(mgpu_cached.library_path(), lib)
        shim = tmp_path / f"libcounthip_{n}.so"
        shutil.copyfile(counthip, shim)
        monkeypatch.setenv("MGPU_CACHED_BACKEND", "hip")
        monkeypatch.setenv("MGPU_CACHED_HIP_RUNTIME", str(shim))
        if disable:
            monkeypatch.setenv("MGPU_CACHED_DISABLE", "1")
        else:
            monkeypatch.delenv("MGPU_CACHED_DISABLE", raising=False)
        self.count = Counter(shim)
        self.lib = bind(ctypes.CDLL(str(lib)))
        self.info = mgpu_cached.Runtime(lib)

    def __getattr__(self, name):
        return getattr(self.lib, name)


@pytest.fixture
def make_amd(tmp_path, monkeypatch, counthip_build, amd_gpu):
    return lambda disable=False: AmdRt(tmp_path, counthip_build, monkeypatch, disable)


class Saxpy:
    """Device buffers for saxpy_kernel(a, x: memref<1024xf32>, y: memref<1024xf32>), made and read
    through the runtime under test; the kernel's 11 arguments (memrefs expanded)."""

    def __init__(self, rt, a=2.0):
        self.rt, self.a = rt, a
        self.x = (np.arange(N) % 13).astype(np.float32)
        self.y0 = (np.arange(N) % 5).astype(np.float32)
        s = rt.mgpuStreamCreate()
        self.dx = rt.mgpuMemAlloc(N * 4, s, False)
        self.dy = rt.mgpuMemAlloc(N * 4, s, False)
        rt.mgpuMemcpy(self.dx, self.x.ctypes.data, N * 4, s)
        rt.mgpuMemcpy(self.dy, self.y0.ctypes.data, N * 4, s)
        rt.mgpuStreamSynchronize(s)
        rt.mgpuStreamDestroy(s)
        self._vals = [ctypes.c_float(a)]
        for p in (self.dx, self.dy):
            self._vals += [ctypes.c_void_p(p), ctypes.c_void_p(p), ctypes.c_int64(0),
                           ctypes.c_int64(N), ctypes.c_int64(1)]
        self.params = (ctypes.c_void_p * 11)(*[ctypes.addressof(v) for v in self._vals])

    def result(self):
        out = np.empty(N, dtype=np.float32)
        s = self.rt.mgpuStreamCreate()
        self.rt.mgpuMemcpy(out.ctypes.data, self.dy, N * 4, s)
        self.rt.mgpuStreamSynchronize(s)
        self.rt.mgpuStreamDestroy(s)
        return out

    def expected(self, times):
        return self.y0 + times * self.a * self.x


def llvm19_step(rt, buf, params):
    """What LLVM <= 20 code does per launch."""
    m = rt.mgpuModuleLoad(buf, len(buf))
    f = rt.mgpuModuleGetFunction(m, b"saxpy_kernel")
    s = rt.mgpuStreamCreate()
    rt.mgpuLaunchKernel(f, 4, 1, 1, 256, 1, 1, 0, s, params, None, 11)
    rt.mgpuStreamSynchronize(s)
    rt.mgpuStreamDestroy(s)
    rt.mgpuModuleUnload(m)
    return m, f, s


def test_cached_results_and_hip_counts(make_amd):
    rt = make_amd()
    assert rt.info.backend == "hip"
    buf = blob_buffer((DATA / "rocm" / "saxpy_gfx942.hsaco").read_bytes())
    sx = Saxpy(rt)
    seen = {llvm19_step(rt, buf, sx.params) for _ in range(10)}
    assert len(seen) == 1  # same module, function and stream every time
    np.testing.assert_array_equal(sx.result(), sx.expected(10))
    assert rt.count("hipModuleLoadData") == 1 and rt.count("hipModuleUnload") == 0
    assert rt.count("hipModuleGetFunction") == 1
    assert rt.count("hipModuleLaunchKernel") == 10
    assert rt.count("hipStreamCreateWithFlags") == 1 and rt.count("hipStreamDestroy") == 0


def test_stock_mode_makes_every_hip_call(make_amd):
    rt = make_amd(disable=True)
    buf = blob_buffer((DATA / "rocm" / "saxpy_gfx942.hsaco").read_bytes())
    sx = Saxpy(rt)
    for _ in range(5):
        llvm19_step(rt, buf, sx.params)
    np.testing.assert_array_equal(sx.result(), sx.expected(5))
    assert rt.count("hipModuleLoadData") == 5 and rt.count("hipModuleUnload") == 5
    assert rt.count("hipStreamCreate") == 5 + 2 and rt.count("hipStreamDestroy") == 5 + 2


def test_streams_reused_and_never_shared(make_amd):
    rt = make_amd()
    a, b = rt.mgpuStreamCreate(), rt.mgpuStreamCreate()
    assert a and b and a != b
    rt.mgpuStreamSynchronize(a)
    rt.mgpuStreamDestroy(a)
    rt.mgpuStreamDestroy(b)
    c, d = rt.mgpuStreamCreate(), rt.mgpuStreamCreate()
    assert {c, d} == {a, b}
    assert rt.count("hipStreamCreateWithFlags") == 2


@pytest.mark.parametrize("llvm", [19, 22])
@pytest.mark.parametrize("disable", [False, True])
def test_mlir_programs_lowered_for_rocm(amd_gpu, tmp_path, llvm, disable):
    if CC is None:
        pytest.skip("no C compiler")
    exe = tmp_path / "saxpy"
    subprocess.run([CC, "-std=c11", "-DSAXPY", "-o", str(exe), str(DATA / "mlir_harness.c"),
                    str(DATA / "mlir" / f"saxpy_rocm_llvm{llvm}.o"),
                    *mgpu_cached.ldflags_list(), "-ldl"], check=True)
    env = dict(os.environ, MGPU_CACHED_BACKEND="hip")
    env.pop("MGPU_CACHED_DISABLE", None)
    if disable:
        env["MGPU_CACHED_DISABLE"] = "1"
    p = subprocess.run([str(exe), "20"], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stdout + p.stderr
