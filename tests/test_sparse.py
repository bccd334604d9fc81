# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The cuSPARSE and cuSPARSELt entry points (sparse.c, sparse_lib.c, abi_sparse.c) against a
recording fake of both libraries (tests/drivers/fakecusparse.c) over the fake driver: loading and
the error naming a missing library, handle reuse per device and stream (cached) vs the stock
wrapper's one handle per environment, the stream each call runs on, the context handles are made
in, argument passing (descriptors, alpha/beta, buffers), real SpMV results in host-backed memory,
and cuSPARSELt's struct layout in the space the MLIR lowering reserves."""

from __future__ import annotations

import ctypes
import shutil
import struct

import pytest

import mgpu_cached
from conftest import DRIVERS, compile_shared

vp = ctypes.c_void_p
i32, i64, ip = ctypes.c_int32, ctypes.c_int64, ctypes.c_ssize_t
CUDA_R_32F, CUDA_R_64F, CUDA_R_16F, CUDA_R_16BF = 0, 1, 2, 14
IDX32, IDX64 = 2, 3

SIGS = {
    "mgpuCreateSparseEnv": (None, []),
    "mgpuDestroySparseEnv": (None, []),
    "mgpuCreateDnVec": (vp, [ip, vp, i32, vp]),
    "mgpuDestroyDnVec": (None, [vp, vp]),
    "mgpuCreateDnMat": (vp, [ip, ip, vp, i32, vp]),
    "mgpuDestroyDnMat": (None, [vp, vp]),
    "mgpuCreateCoo": (vp, [ip, ip, ip, vp, vp, vp, i32, i32, vp]),
    "mgpuCreateCsr": (vp, [ip, ip, ip, vp, vp, vp, i32, i32, i32, vp]),
    "mgpuCreateCsc": (vp, [ip, ip, ip, vp, vp, vp, i32, i32, i32, vp]),
    "mgpuCreateBsr": (vp, [ip, ip, ip, ip, ip, vp, vp, vp, i32, i32, i32, vp]),
    "mgpuDestroySpMat": (None, [vp, vp]),
    "mgpuSpMVBufferSize": (ip, [i32, vp, vp, vp, i32, vp]),
    "mgpuSpMV": (None, [i32, vp, vp, vp, i32, vp, vp]),
    "mgpuSpMMBufferSize": (ip, [i32, i32, vp, vp, vp, i32, vp]),
    "mgpuSpMM": (None, [i32, i32, vp, vp, vp, i32, vp, vp]),
    "mgpuSDDMMBufferSize": (ip, [i32, i32, vp, vp, vp, i32, vp]),
    "mgpuSDDMM": (None, [i32, i32, vp, vp, vp, i32, vp, vp]),
    "mgpuSpGEMMCreateDescr": (vp, [vp]),
    "mgpuSpGEMMDestroyDescr": (None, [vp, vp]),
    "mgpuSpGEMMWorkEstimation": (ip, [vp, i32, i32, vp, vp, vp, i32, ip, vp, vp]),
    "mgpuSpGEMMCompute": (ip, [vp, i32, i32, vp, vp, vp, i32, ip, vp, vp]),
    "mgpuSpGEMMCopy": (None, [vp, i32, i32, vp, vp, vp, i32, vp]),
    "mgpuSpMatGetSize": (None, [vp, vp, vp, vp, vp]),
    "mgpuSetCsrPointers": (None, [vp, vp, vp, vp, vp]),
    "mgpuCreateSparseLtEnv": (None, []),
    "mgpuDestroySparseLtEnv": (None, []),
    "mgpuCreateCuSparseLtDnMat": (None, [vp, ip, ip, vp, i32, vp]),
    "mgpuDestroyCuSparseLtDnMat": (None, [vp, vp]),
    "mgpuCusparseLtCreate2To4SpMat": (None, [vp, ip, ip, vp, i32, vp]),
    "mgpuDestroyCuSparseLtSpMat": (None, [vp, vp]),
    "mgpuCuSparseLtSpMMBufferSize": (None, [vp, i32, i32, vp, vp, vp, i32, i32, vp]),
    "mgpuCuSparseLtSpMM": (None, [vp, vp, vp, vp, vp, vp, vp]),
}


@pytest.fixture(scope="session")
def fake_sparse_build(tmp_path_factory):
    out = tmp_path_factory.mktemp("drivers") / "libfakecusparse.so"
    return compile_shared(DRIVERS / "fakecusparse.c", out)


class Sp:
    def __init__(self, rt, path):
        self.rt = rt
        self.lib = rt.lib
        for name, (res, args) in SIGS.items():
            f = getattr(self.lib, name)
            f.restype, f.argtypes = res, args
        self.fake = ctypes.CDLL(str(path))
        for name, res, args in [
            ("fake_count", ctypes.c_long, [ctypes.c_char_p]),
            ("fake_fail", ctypes.c_int, [ctypes.c_char_p, ctypes.c_int, ctypes.c_int]),
            ("fake_log", ctypes.c_size_t, [ctypes.c_char_p, ctypes.c_size_t]),
            ("fake_sp_create_ctx", vp, []), ("fake_sp_last_handle", vp, []),
            ("fake_sp_last_stream", vp, []), ("fake_sp_last_alpha", ctypes.c_double, []),
            ("fake_sp_last_beta", ctypes.c_double, []), ("fake_sp_last_compute", ctypes.c_int, []),
            ("fake_sp_last_buffer", vp, []), ("fake_sp_handles_live", ctypes.c_int, []),
            ("fake_lt_nstreams", ctypes.c_int, []), ("fake_lt_arg", vp, [ctypes.c_int]),
            ("fake_sp_desc_field", ctypes.c_long, [vp, ctypes.c_int]),
            ("fake_sp_desc_ptr", vp, [vp, ctypes.c_int]),
        ]:
            f = getattr(self.fake, name)
            f.restype, f.argtypes = res, args

    def __getattr__(self, name):
        return getattr(self.lib, name)

    def count(self, name):
        n = self.fake.fake_count(name.encode())
        assert n >= 0, name
        return n

    def log(self):
        buf = ctypes.create_string_buffer(1 << 16)
        self.fake.fake_log(buf, len(buf))
        return [x for x in buf.value.decode().split(",") if x]

    def device_array(self, arr, stream=None):
        """A device copy of a ctypes array."""
        n = ctypes.sizeof(arr)
        p = self.lib.mgpuMemAlloc(n, stream, False)
        self.lib.mgpuMemcpy(p, ctypes.addressof(arr), n, stream)
        return p

    def read(self, p, like, stream=None):
        out = type(like)()
        self.lib.mgpuMemcpy(ctypes.addressof(out), p, ctypes.sizeof(out), stream)
        self.lib.mgpuStreamSynchronize(stream)
        return list(out)


@pytest.fixture
def make_sparse(make_runtime, fake_sparse_build, tmp_path, monkeypatch):
    n = [0]

    def make(devices=1, disable=False, env=None, lt_version=None):
        n[0] += 1
        fake = tmp_path / f"libfakecusparse_{n[0]}.so"
        shutil.copyfile(fake_sparse_build, fake)
        e = {"MGPU_CACHED_CUSPARSE": str(fake), "MGPU_CACHED_CUSPARSELT": str(fake)}
        if lt_version is not None:
            e["FAKECUSPARSELT_VERSION"] = str(lt_version)
        e.update(env or {})
        rt = make_runtime(devices=devices, disable=disable, env=e)
        return Sp(rt, fake)

    return make


def arr(ctype, values):
    return (ctype * len(values))(*values)


def spmv_once(sp, stream, A, x, y):
    """The calls MLIR 19's sparsifier makes for y += A x (CSR f32, 32-bit indices), on `stream`."""
    rows, cols = len(A), len(A[0])
    pos, idx, val = [0], [], []
    for i in range(rows):
        for j in range(cols):
            if A[i][j]:
                idx.append(j)
                val.append(A[i][j])
        pos.append(len(idx))
    f32 = ctypes.c_float
    dpos, didx = sp.device_array(arr(i32, pos), stream), sp.device_array(arr(i32, idx), stream)
    dval = sp.device_array(arr(f32, val), stream)
    yh = arr(f32, y)
    dx, dy = sp.device_array(arr(f32, x), stream), sp.device_array(yh, stream)
    m = sp.mgpuCreateCsr(rows, cols, len(val), dpos, didx, dval, IDX32, IDX32, CUDA_R_32F, stream)
    vx = sp.mgpuCreateDnVec(cols, dx, CUDA_R_32F, stream)
    vy = sp.mgpuCreateDnVec(rows, dy, CUDA_R_32F, stream)
    n = sp.mgpuSpMVBufferSize(0, m, vx, vy, CUDA_R_32F, stream)
    buf = sp.mgpuMemAlloc(n, stream, False)
    sp.mgpuSpMV(0, m, vx, vy, CUDA_R_32F, buf, stream)
    sp.mgpuDestroySpMat(m, stream)
    sp.mgpuDestroyDnVec(vx, stream)
    sp.mgpuDestroyDnVec(vy, stream)
    out = sp.read(dy, yh, stream)
    for p in (dpos, didx, dval, dx, dy, buf):
        sp.mgpuMemFree(p, stream)
    return out, n, buf


def matrix():
    """A 9x7 f32 matrix with about 40% nonzeros, x and y (values exact in f32)."""
    A = [[float((3 * i + 5 * j) % 8) if (i * 7 + j * 3) % 5 < 2 else 0.0 for j in range(7)]
         for i in range(9)]
    return A, [0.5 * (j + 1) for j in range(7)], [0.25 * i for i in range(9)]


def expected(A, x, y):
    return [sum(a * b for a, b in zip(row, x)) + yi for row, yi in zip(A, y)]


@pytest.mark.parametrize("disable", [False, True])
def test_spmv_results_match_the_cpu(make_sparse, disable):
    sp = make_sparse(disable=disable)
    sp.mgpuCreateSparseEnv()
    A, x, y = matrix()
    s = sp.mgpuStreamCreate()
    out, n, _ = spmv_once(sp, s, A, x, y)
    assert n == 96
    assert out == expected(A, x, y)
    assert sp.fake.fake_sp_last_alpha() == 1.0 and sp.fake.fake_sp_last_beta() == 1.0
    sp.mgpuStreamDestroy(s)
    sp.mgpuDestroySparseEnv()


def test_cached_reuses_one_handle_per_stream_across_environments(make_sparse):
    sp = make_sparse()
    A, x, y = matrix()
    for _ in range(5):
        sp.mgpuCreateSparseEnv()
        s = sp.mgpuStreamCreate()
        out, _, _ = spmv_once(sp, s, A, x, y)
        assert out == expected(A, x, y)
        driver_stream = sp.fake.fake_sp_last_stream()
        sp.mgpuStreamDestroy(s)
        sp.mgpuDestroySparseEnv()
    # One handle warmed on the NULL stream, one for the pooled driver stream every environment
    # gets back (a destroyed one is parked until a poll proves it idle; the device's first
    # creates poll it rather than make another: MGPU_CACHED_POOL_SPARE_AFTER).
    assert sp.count("cusparseCreate") == 2 and sp.count("cusparseDestroy") == 0
    assert sp.count("cusparseSetStream") == 2
    assert sp.count("cusparseSpMV") == 5
    # The SpMV ran on the program's stream: the driver stream behind the library's handle.
    assert driver_stream  # a driver stream, not the NULL stream
    s2 = sp.mgpuStreamCreate()
    spmv_once(sp, s2, A, x, y)
    assert sp.fake.fake_sp_last_stream() == sp.rt.pin(s2) != 0


def test_stock_mode_one_handle_per_environment_on_the_null_stream(make_sparse):
    sp = make_sparse(disable=True)
    A, x, y = matrix()
    for _ in range(3):
        sp.mgpuCreateSparseEnv()
        s = sp.mgpuStreamCreate()
        out, _, _ = spmv_once(sp, s, A, x, y)
        assert out == expected(A, x, y)
        assert sp.fake.fake_sp_last_stream() is None  # upstream never sets a stream
        sp.mgpuStreamDestroy(s)
        sp.mgpuDestroySparseEnv()
    assert sp.count("cusparseCreate") == 3 and sp.count("cusparseDestroy") == 3
    assert sp.count("cusparseSetStream") == 0
    assert sp.fake.fake_sp_handles_live() == 0
    # cusparseCreate ran inside upstream's ScopedContext: the stock context pushed, then popped.
    assert sp.fake.fake_sp_create_ctx() == sp.rt.fake.fake_primary_context(0)
    assert sp.rt.fake.fake_current_context() is None


def test_handles_are_made_in_the_streams_device_context_and_leave_the_callers(make_sparse):
    sp = make_sparse(devices=2)
    sp.lib.mgpuSetDefaultDevice(1)
    s = sp.mgpuStreamCreate()
    A, x, y = matrix()
    out, _, _ = spmv_once(sp, s, A, x, y)
    assert out == expected(A, x, y)
    assert sp.fake.fake_sp_create_ctx() == sp.rt.fake.fake_primary_context(1)
    assert sp.rt.fake.fake_current_context() is None
    assert sp.rt.fake.fake_stream_device(s) == 1
    # A second device gets its own handle.
    sp.lib.mgpuSetDefaultDevice(0)
    s0 = sp.mgpuStreamCreate()
    spmv_once(sp, s0, A, x, y)
    assert sp.fake.fake_sp_create_ctx() == sp.rt.fake.fake_primary_context(0)
    assert sp.count("cusparseCreate") == 2


def test_destroyed_stream_is_reported_not_passed_on(make_sparse, capfd):
    sp = make_sparse()
    s = sp.mgpuStreamCreate()
    sp.mgpuStreamDestroy(s)
    capfd.readouterr()
    assert sp.mgpuSpMVBufferSize(0, None, None, None, CUDA_R_32F, s) == 0
    err = capfd.readouterr().err
    assert "CUDA_ERROR_INVALID_HANDLE" in err
    assert sp.count("cusparseSpMV_bufferSize") == 0


@pytest.mark.parametrize("ctp,alpha", [(CUDA_R_64F, 1.0), (CUDA_R_16F, 1.0), (CUDA_R_16BF, 1.0),
                                       (CUDA_R_32F, 1.0)])
def test_alpha_beta_in_the_compute_type(make_sparse, ctp, alpha):
    sp = make_sparse()
    assert sp.mgpuSpMMBufferSize(0, 0, None, None, None, ctp, None) == 128
    assert sp.fake.fake_sp_last_compute() == ctp
    assert sp.fake.fake_sp_last_alpha() == alpha and sp.fake.fake_sp_last_beta() == alpha
    assert sp.mgpuSDDMMBufferSize(0, 0, None, None, None, ctp, None) == 128
    sp.mgpuSDDMM(0, 0, None, None, None, ctp, 0x1234, None)
    assert sp.fake.fake_sp_last_buffer() == 0x1234
    sp.mgpuSpMM(1, 0, None, None, None, ctp, 0x5678, None)
    assert sp.fake.fake_sp_last_buffer() == 0x5678


def test_descriptor_arguments(make_sparse):
    sp = make_sparse()
    f = sp.fake.fake_sp_desc_field
    m = sp.mgpuCreateCsc(5, 6, 7, 0x10, 0x20, 0x30, IDX64, IDX32, CUDA_R_64F, None)
    assert [f(m, i) for i in range(8)] == [5, 5, 6, 7, 0, IDX64, IDX32, CUDA_R_64F]
    assert [sp.fake.fake_sp_desc_ptr(m, i) for i in range(3)] == [0x10, 0x20, 0x30]
    b = sp.mgpuCreateBsr(2, 3, 4, 2, 2, 0x1, 0x2, 0x3, IDX32, IDX32, CUDA_R_32F, None)
    assert f(b, 0) == 6 and f(b, 4) == 2002 and f(b, 3) == 4
    coo = sp.mgpuCreateCoo(3, 3, 2, 0x1, 0x2, 0x3, IDX64, CUDA_R_32F, None)
    assert f(coo, 0) == 3 and f(coo, 5) == IDX64
    d = sp.mgpuCreateDnMat(4, 8, 0x40, CUDA_R_32F, None)
    assert f(d, 1) == 4 and f(d, 2) == 8 and f(d, 4) == 8 and f(d, 8) == 2  # ld = cols, row major
    sp.mgpuSetCsrPointers(m, 0x100, 0x200, 0x300, None)
    assert [sp.fake.fake_sp_desc_ptr(m, i) for i in range(3)] == [0x100, 0x200, 0x300]
    for x in (m, b, coo):
        sp.mgpuDestroySpMat(x, None)
    sp.mgpuDestroyDnMat(d, None)
    assert sp.count("cusparseDestroySpMat") == 3


def test_spgemm_sequence(make_sparse):
    sp = make_sparse()
    s = sp.mgpuStreamCreate()
    a = sp.mgpuCreateCsr(4, 4, 5, 1, 2, 3, IDX32, IDX32, CUDA_R_32F, s)
    b = sp.mgpuCreateCsr(4, 4, 6, 1, 2, 3, IDX32, IDX32, CUDA_R_32F, s)
    c = sp.mgpuCreateCsr(4, 4, 0, None, None, None, IDX32, IDX32, CUDA_R_32F, s)
    d = sp.mgpuSpGEMMCreateDescr(s)
    assert sp.mgpuSpGEMMWorkEstimation(d, 0, 0, a, b, c, CUDA_R_32F, 0, None, s) == 1064
    assert sp.mgpuSpGEMMWorkEstimation(d, 0, 0, a, b, c, CUDA_R_32F, 1064, 0xAB, s) == 1064
    assert sp.fake.fake_sp_last_buffer() == 0xAB
    assert sp.mgpuSpGEMMCompute(d, 0, 0, a, b, c, CUDA_R_32F, 0, None, s) == 2064
    assert sp.mgpuSpGEMMCompute(d, 0, 0, a, b, c, CUDA_R_32F, 2064, 0xCD, s) == 2064
    r, k, n = ctypes.c_int64(), ctypes.c_int64(), ctypes.c_int64()
    sp.mgpuSpMatGetSize(c, ctypes.byref(r), ctypes.byref(k), ctypes.byref(n), s)
    assert (r.value, k.value, n.value) == (4, 4, 11)
    sp.mgpuSpGEMMCopy(d, 0, 0, a, b, c, CUDA_R_32F, s)
    sp.mgpuSpGEMMDestroyDescr(d, s)
    assert sp.fake.fake_sp_last_stream() == sp.rt.pin(s)
    assert sp.count("cusparseSpGEMM_copy") == 1 and sp.count("cusparseSpGEMM_destroyDescr") == 1


@pytest.mark.parametrize("disable", [False, True])
def test_empty_spgemm_result_gets_zero_row_offsets_in_cached_mode(make_sparse, disable):
    """The sparsifier hands SpGEMM an empty CSR C whose row offsets it allocated and never wrote;
    with the caching allocator they held the previous result (wrong SpGEMM on the H100)."""
    sp = make_sparse(disable=disable)
    sp.mgpuCreateSparseEnv()
    s = sp.mgpuStreamCreate()
    for width, itp in ((8, IDX64), (4, IDX32)):
        garbage = arr(ctypes.c_uint8, [0xAB] * (33 * width))
        off = sp.device_array(garbage, s)
        a = sp.mgpuCreateCsr(32, 32, 5, 1, 2, 3, itp, itp, CUDA_R_32F, s)
        c = sp.mgpuCreateCsr(32, 32, 0, off, None, None, itp, itp, CUDA_R_32F, s)
        d = sp.mgpuSpGEMMCreateDescr(s)
        assert sp.mgpuSpGEMMWorkEstimation(d, 0, 0, a, a, c, CUDA_R_32F, 0, None, s) == 1064
        after = sp.read(off, garbage, s)
        assert after == ([0] * len(after) if not disable else [0xAB] * len(after))
        # a C that is not empty is left alone
        full = sp.device_array(garbage, s)
        c2 = sp.mgpuCreateCsr(32, 32, 7, full, 1, 1, itp, itp, CUDA_R_32F, s)
        sp.mgpuSpGEMMWorkEstimation(d, 0, 0, a, a, c2, CUDA_R_32F, 0, None, s)
        assert sp.read(full, garbage, s) == [0xAB] * len(after)


def test_library_status_reported_in_the_stock_form(make_sparse, capfd):
    sp = make_sparse()
    assert sp.fake.fake_fail(b"cusparseSpMV", 3, 0) == 0
    sp.mgpuSpMV(0, None, None, None, CUDA_R_32F, None, None)
    err = capfd.readouterr().err
    assert "cuSPARSE 'cusparseSpMV' failed with 'invalid value'" in err
    sp.mgpuSpMV(0, None, None, None, CUDA_R_32F, None, None)  # the handle is still usable
    assert sp.count("cusparseSpMV") == 2 and sp.count("cusparseCreate") == 1


def test_missing_library_is_named_once(make_sparse, tmp_path, capfd):
    sp = make_sparse(env={"MGPU_CACHED_CUSPARSE": str(tmp_path / "nowhere" / "libcusparse.so.12")})
    capfd.readouterr()
    sp.mgpuCreateSparseEnv()
    assert sp.mgpuCreateCsr(1, 1, 1, 1, 1, 1, IDX32, IDX32, CUDA_R_32F, None) is None
    err = capfd.readouterr().err
    assert err.count("could not be loaded") == 1
    assert "cuSPARSE (libcusparse.so.12)" in err and "MGPU_CACHED_CUSPARSE" in err
    assert "nowhere/libcusparse.so.12" in err and "pip install nvidia-cusparse" in err
    assert sp.count("cusparseCreate") == 0


def test_found_in_a_python_wheel_beside_the_library(fake_sparse_build, fake_driver_build, tmp_path,
                                                    monkeypatch):
    """pip layout: site-packages/mgpu_cached/lib/libmgpu_cached.so and nvidia-cusparse's
    site-packages/nvidia/cu13/lib/libcusparse.so.12 (cu12 wheels: nvidia/cusparse/lib)."""
    import ctypes.util
    if ctypes.util.find_library("cusparse"):
        pytest.skip("a system libcusparse would be found first")
    site = tmp_path / "site-packages"
    (site / "mgpu_cached" / "lib").mkdir(parents=True)
    (site / "nvidia" / "cu13" / "lib").mkdir(parents=True)
    lib = site / "mgpu_cached" / "lib" / "libmgpu_cached.so"
    shutil.copyfile(mgpu_cached.library_path(), lib)
    fake = site / "nvidia" / "cu13" / "lib" / "libcusparse.so.12"
    shutil.copyfile(fake_sparse_build, fake)
    drv = tmp_path / "libfakecuda_w.so"
    shutil.copyfile(fake_driver_build, drv)
    for k in ("MGPU_CACHED_CUSPARSE", "MGPU_CACHED_DISABLE", "CUDA_HOME", "CUDA_PATH",
              "CONDA_PREFIX", "VIRTUAL_ENV"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("MGPU_CACHED_CUDA_DRIVER", str(drv))
    monkeypatch.setenv("HOME", str(tmp_path))
    rt = ctypes.CDLL(str(lib))
    rt.mgpuCreateSparseEnv()
    fake_lib = ctypes.CDLL(str(fake))
    fake_lib.fake_count.restype = ctypes.c_long
    assert fake_lib.fake_count(b"cusparseCreate") == 1


def test_found_in_cuda_home(fake_sparse_build, fake_driver_build, tmp_path, monkeypatch):
    import ctypes.util
    if ctypes.util.find_library("cusparse"):
        pytest.skip("a system libcusparse would be found first")
    cuda = tmp_path / "cuda"
    (cuda / "targets" / "x86_64-linux" / "lib").mkdir(parents=True)
    fake = cuda / "targets" / "x86_64-linux" / "lib" / "libcusparse.so.12"
    shutil.copyfile(fake_sparse_build, fake)
    lib = tmp_path / "libmgpu_cached_ch.so"
    shutil.copyfile(mgpu_cached.library_path(), lib)
    drv = tmp_path / "libfakecuda_ch.so"
    shutil.copyfile(fake_driver_build, drv)
    monkeypatch.delenv("MGPU_CACHED_CUSPARSE", raising=False)
    monkeypatch.delenv("MGPU_CACHED_DISABLE", raising=False)
    monkeypatch.setenv("CUDA_HOME", str(cuda))
    monkeypatch.setenv("MGPU_CACHED_CUDA_DRIVER", str(drv))
    rt = ctypes.CDLL(str(lib))
    rt.mgpuCreateSparseEnv()
    fake_lib = ctypes.CDLL(str(fake))
    fake_lib.fake_count.restype = ctypes.c_long
    assert fake_lib.fake_count(b"cusparseCreate") == 1


# ---- cuSPARSELt ----

SPMAT, DNMAT = 44104, 11032


class Reserved:
    """Caller-reserved space as the lowering makes it: `n` bytes, 16-byte aligned."""

    def __init__(self, n):
        self.raw = ctypes.create_string_buffer(n + 16 + 64)
        base = ctypes.addressof(self.raw)
        self.addr = (base + 15) // 16 * 16
        self.n = n
        ctypes.memset(self.addr + n, 0x5A, 32)  # guard bytes after the reserved space

    def guard_intact(self):
        return ctypes.string_at(self.addr + self.n, 32) == b"\x5a" * 32

    def u64(self, off):
        return struct.unpack("<Q", ctypes.string_at(self.addr + off, 8))[0]


def lt_program(sp, s, prune=2, ctp=0):
    """The calls MLIR 19's 2:4 lowering makes (see the reference notes), on stream `s`."""
    sh, b, c = Reserved(SPMAT), Reserved(DNMAT), Reserved(DNMAT)
    va, vb, vc = (sp.mgpuMemAlloc(16 * 16 * 2, s, False) for _ in range(3))
    sp.mgpuCusparseLtCreate2To4SpMat(sh.addr, 16, 16, va, CUDA_R_16F, s)
    sp.mgpuCreateCuSparseLtDnMat(b.addr, 16, 16, vb, CUDA_R_16F, s)
    sp.mgpuCreateCuSparseLtDnMat(c.addr, 16, 16, vc, CUDA_R_16F, s)
    bs = (ctypes.c_int64 * 3)()
    sp.mgpuCuSparseLtSpMMBufferSize(bs, 0, 0, sh.addr, b.addr, c.addr, ctp, prune, s)
    ws, comp, compbuf = (sp.mgpuMemAlloc(n, s, False) for n in bs)
    sp.mgpuCuSparseLtSpMM(sh.addr, b.addr, c.addr, ws, comp, compbuf, s)
    return sh, b, c, (va, vb, vc), list(bs), (ws, comp, compbuf)


@pytest.mark.parametrize("version,struct_bytes,compute", [(801, 512, 1), (1000, 512, 1),
                                                         (502, 11024, 0)])
def test_sparselt_layout_and_compute_type(make_sparse, version, struct_bytes, compute):
    sp = make_sparse(lt_version=version)
    sp.mgpuCreateSparseLtEnv()
    s = sp.mgpuStreamCreate()
    sh, b, c, (va, vb, vc), sizes, (ws, comp, _) = lt_program(sp, s)
    assert sizes == [4096, 2048, 512]
    # The lowering's code 0 (16F in 0.5's numbering) becomes the loaded version's 16F.
    assert sp.fake.fake_sp_last_compute() == compute
    # Values pointers kept at the end of the reserved space; the library's writes stayed inside.
    assert sh.u64(SPMAT - 8) == va and b.u64(DNMAT - 8) == vb and c.u64(DNMAT - 8) == vc
    assert sh.guard_intact() and b.guard_intact() and c.guard_intact()
    # Matmul: compressed A, B's and C's values, D = C, the workspace; on the program's stream.
    assert [sp.fake.fake_lt_arg(i) for i in range(5)] == [comp, vb, vc, vc, ws]
    assert sp.fake.fake_lt_nstreams() == 1 and sp.fake.fake_sp_last_stream() == sp.rt.pin(s)
    assert sp.fake.fake_sp_last_alpha() == 1.0 and sp.fake.fake_sp_last_beta() == 1.0
    sp.mgpuDestroyCuSparseLtSpMat(sh.addr, s)
    sp.mgpuDestroyCuSparseLtDnMat(b.addr, s)
    sp.mgpuDestroyCuSparseLtDnMat(c.addr, s)
    # Each descriptor destroyed once (the fake fails a second destroy); the plan once where it is
    # made per call (0.5: no room for kept plans), else kept for the next SpMM of that shape.
    assert sp.count("cusparseLtMatDescriptorDestroy") == 3
    assert sp.count("cusparseLtMatmulPlanDestroy") == (1 if struct_bytes > 512 else 0)
    assert sp.count("cusparseLtSpMMAPrune") == 1 and sp.count("cusparseLtSpMMAPruneCheck") == 1
    sp.mgpuDestroySparseLtEnv()
    sp.mgpuCreateSparseLtEnv()
    lt_program(sp, s, prune=0)
    assert sp.count("cusparseLtInit") == 1 and sp.count("cusparseLtDestroy") == 0  # reused
    assert sp.count("cusparseLtSpMMAPrune") == 1  # prune flag 0: no pruning


def test_sparselt_struct_too_big_for_the_reserved_space(make_sparse, capfd):
    sp = make_sparse(env={"MGPU_CACHED_CUSPARSELT_STRUCT_BYTES": "12000",
                          "FAKECUSPARSELT_STRUCT_BYTES": "12000"})
    capfd.readouterr()
    sp.mgpuCreateSparseLtEnv()
    sh = Reserved(SPMAT)
    sp.mgpuCusparseLtCreate2To4SpMat(sh.addr, 16, 16, None, CUDA_R_16F, None)
    err = capfd.readouterr().err
    assert "needs 12000 bytes per opaque struct" in err and "44104" in err
    assert sp.count("cusparseLtInit") == 0 and sp.count("cusparseLtStructuredDescriptorInit") == 0
    assert sh.guard_intact()


def test_sparselt_prune_check_warns(make_sparse, capfd):
    sp = make_sparse(env={"FAKECUSPARSELT_NOT_24": "1"})
    sp.mgpuCreateSparseLtEnv()
    s = sp.mgpuStreamCreate()
    capfd.readouterr()
    lt_program(sp, s, prune=2)
    assert "sparse matrix is not 2:4" in capfd.readouterr().err


def test_sparselt_prune_check_flag_starts_at_zero(make_sparse, capfd):
    """cuSPARSELt writes the check's flag only when the matrix is not 2:4: the flag's memory,
    reused from the caching allocator, must be zeroed first (spurious warnings on the H100)."""
    sp = make_sparse()
    sp.mgpuCreateSparseLtEnv()
    s = sp.mgpuStreamCreate()
    blocks = [sp.mgpuMemAlloc(4, s, False) for _ in range(16)]  # leave non-zero small blocks
    for p in blocks:                                             # in the allocator's cache
        sp.mgpuMemset32(p, 0xFFFFFFFF, 1, s)
    for p in blocks:
        sp.mgpuMemFree(p, s)
    sp.mgpuStreamSynchronize(s)
    capfd.readouterr()
    lt_program(sp, s, prune=2)
    lt_program(sp, s, prune=2)
    assert "not 2:4" not in capfd.readouterr().err
    assert sp.count("cusparseLtSpMMAPruneCheck") == 2


def test_sparselt_stock_mode(make_sparse):
    sp = make_sparse(disable=True)
    for _ in range(2):
        sp.mgpuCreateSparseLtEnv()
        s = sp.mgpuStreamCreate()
        sh, b, c, vals, sizes, _ = lt_program(sp, s)
        # upstream: no streams for the matmul, the caller's stream for prune and compress
        assert sp.fake.fake_lt_nstreams() == 0 and sp.fake.fake_sp_last_stream() is None
        assert sp.fake.fake_sp_last_compute() == 1
        sp.mgpuDestroyCuSparseLtSpMat(sh.addr, s)
        sp.mgpuStreamDestroy(s)
        sp.mgpuDestroySparseLtEnv()
    assert sp.count("cusparseLtInit") == 2 and sp.count("cusparseLtDestroy") == 2
    assert sp.fake.fake_sp_create_ctx() == sp.rt.fake.fake_primary_context(0)


def test_sparselt_missing_library_is_named(make_sparse, tmp_path, capfd):
    sp = make_sparse(env={"MGPU_CACHED_CUSPARSELT": str(tmp_path / "none.so")})
    capfd.readouterr()
    sp.mgpuCreateSparseLtEnv()
    sp.mgpuCreateSparseLtEnv()
    err = capfd.readouterr().err
    assert err.count("cuSPARSELt (libcusparseLt.so.0) could not be loaded") == 1
    assert "nvidia-cusparselt-cu13" in err and "MGPU_CACHED_CUSPARSELT" in err


def test_fork_child_makes_its_own_handles(make_sparse):
    """A child of fork() forgets the parent's cuSPARSE/cuSPARSELt handles (they belong to the
    parent's contexts) and makes new ones on first use; the parent keeps reusing its own."""
    import os
    sp = make_sparse()
    sp.mgpuCreateSparseEnv()
    sp.mgpuSpMMBufferSize(0, 0, None, None, None, CUDA_R_32F, None)
    sp.mgpuCreateSparseLtEnv()
    assert sp.count("cusparseCreate") == 1 and sp.count("cusparseLtInit") == 1
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: report the counts after one call of each kind, then leave at once
        os.close(r)
        sp.mgpuSpMMBufferSize(0, 0, None, None, None, CUDA_R_32F, None)
        sp.mgpuCreateSparseLtEnv()
        os.write(w, f"{sp.count('cusparseCreate')} {sp.count('cusparseLtInit')}".encode())
        os._exit(0)
    os.close(w)
    got = os.read(r, 64).decode()
    os.waitpid(pid, 0)
    assert got == "2 2"
    sp.mgpuSpMMBufferSize(0, 0, None, None, None, CUDA_R_32F, None)
    sp.mgpuCreateSparseLtEnv()
    assert sp.count("cusparseCreate") == 1 and sp.count("cusparseLtInit") == 1


# ---- cuSPARSELt: what one repeated 2:4 step costs (issue 21: never slower than stock) ----

LT_PLAN_CALLS = ("cusparseLtMatmulDescriptorInit", "cusparseLtMatmulAlgSelectionInit",
                 "cusparseLtMatmulAlgSetAttribute", "cusparseLtMatmulPlanInit",
                 "cusparseLtMatmulPlanDestroy")


def lt_step(sp, s, prune=2, shape=(16, 16, 16), ctp=0):
    """One execution of MLIR's 2:4 code: create, size, allocate, SpMM, destroy, free."""
    m, k, n = shape
    sh, b, c = Reserved(SPMAT), Reserved(DNMAT), Reserved(DNMAT)
    va, vb, vc = (sp.mgpuMemAlloc(x, s, False) for x in (2 * m * k, 2 * k * n, 2 * m * n))
    sp.mgpuCusparseLtCreate2To4SpMat(sh.addr, m, k, va, CUDA_R_16F, s)
    sp.mgpuCreateCuSparseLtDnMat(b.addr, k, n, vb, CUDA_R_16F, s)
    sp.mgpuCreateCuSparseLtDnMat(c.addr, m, n, vc, CUDA_R_16F, s)
    bs = (ctypes.c_int64 * 3)()
    sp.mgpuCuSparseLtSpMMBufferSize(bs, 0, 0, sh.addr, b.addr, c.addr, ctp, prune, s)
    bufs = [sp.mgpuMemAlloc(x, s, False) for x in bs]
    sp.mgpuCuSparseLtSpMM(sh.addr, b.addr, c.addr, *bufs, s)
    sp.mgpuDestroyCuSparseLtSpMat(sh.addr, s)
    sp.mgpuDestroyCuSparseLtDnMat(b.addr, s)
    sp.mgpuDestroyCuSparseLtDnMat(c.addr, s)
    for p in (va, vb, vc, *bufs):
        sp.mgpuMemFree(p, s)
    sp.mgpuStreamSynchronize(s)


def step_counts(sp, steps, **kw):
    """The cuSPARSELt calls and the library's allocations (mgpuMemAlloc and its own) of each step
    after the first, from the fake's log and the library's statistics."""
    from collections import Counter
    sp.mgpuCreateSparseLtEnv()
    s = sp.mgpuStreamCreate()
    lt_step(sp, s, **kw)
    out = []
    for _ in range(steps):
        sp.fake.fake_reset()
        st0 = sp.rt.stats()
        lt_step(sp, s, **kw)
        st1 = sp.rt.stats()
        allocs = sum(st1[k] - st0[k] for k in ("alloc_hits", "alloc_misses", "alloc_ordered_hits"))
        out.append((Counter(sp.log()), allocs))
    return out


def test_repeated_2to4_step_keeps_its_plan_and_makes_no_more_calls_than_stock(make_sparse):
    """Upstream makes a matmul descriptor, an algorithm selection and a plan in every BufferSize and
    destroys the plan in every SpMM; cached mode keeps the plan for the same parameters (every
    argument of its making is a scalar the creates were given): a repeated step makes none of those
    calls and allocates nothing for the prune check's flag, and no cuSPARSELt call more often
    than the stock behaviour."""
    cached = step_counts(make_sparse(), 3)
    stock = step_counts(make_sparse(disable=True), 3)
    per_step = {"cusparseLtStructuredDescriptorInit": 1, "cusparseLtDenseDescriptorInit": 2,
                "cusparseLtSpMMAPrune": 1, "cusparseLtSpMMAPruneCheck": 1,
                "cusparseLtMatmulGetWorkspace": 1, "cusparseLtSpMMACompressedSize": 1,
                "cusparseLtSpMMACompress": 1, "cusparseLtMatmul": 1,
                "cusparseLtMatDescriptorDestroy": 3}
    for (calls, allocs), (stock_calls, stock_allocs) in zip(cached, stock):
        assert dict(calls) == per_step
        assert dict(stock_calls) == {**per_step, **{k: 1 for k in LT_PLAN_CALLS}}
        assert all(calls[k] <= stock_calls[k] for k in calls)
        assert allocs == 6  # the program's six buffers, nothing of the library's own
        assert stock_allocs == 0  # stock mode: driver allocations, no cache statistics


def test_kept_plans_follow_every_parameter_and_are_never_shared(make_sparse, capfd):
    sp = make_sparse()
    sp.mgpuCreateSparseLtEnv()
    s = sp.mgpuStreamCreate()
    lt_step(sp, s)
    lt_step(sp, s)
    assert sp.count("cusparseLtMatmulPlanInit") == 1
    lt_step(sp, s, shape=(32, 16, 16))  # another A: another plan
    lt_step(sp, s, shape=(16, 16, 32))  # another B and C
    lt_step(sp, s, ctp=1)               # another compute type
    assert sp.count("cusparseLtMatmulPlanInit") == 4
    assert sp.fake.fake_sp_last_compute() == 0  # ctp 1 (0.5: 32I) is 0.8's 0
    for shape in ((32, 16, 16), (16, 16, 32)):
        lt_step(sp, s, shape=shape)
    lt_step(sp, s, ctp=1)
    assert sp.count("cusparseLtMatmulPlanInit") == 4
    # Two 2:4 matrices alive at once with the same parameters: two plans, one each.
    mats = []
    for _ in range(2):
        sh, b, c = Reserved(SPMAT), Reserved(DNMAT), Reserved(DNMAT)
        sp.mgpuCusparseLtCreate2To4SpMat(sh.addr, 16, 16, None, CUDA_R_16F, s)
        sp.mgpuCreateCuSparseLtDnMat(b.addr, 16, 16, None, CUDA_R_16F, s)
        sp.mgpuCreateCuSparseLtDnMat(c.addr, 16, 16, None, CUDA_R_16F, s)
        bs = (ctypes.c_int64 * 3)()
        sp.mgpuCuSparseLtSpMMBufferSize(bs, 0, 0, sh.addr, b.addr, c.addr, 0, 0, s)
        mats.append((sh, b, c))
    assert sp.count("cusparseLtMatmulPlanInit") == 5
    for sh, b, c in mats:  # the fake fails a plan whose descriptors were destroyed
        sp.mgpuCuSparseLtSpMM(sh.addr, b.addr, c.addr, None, None, None, s)
    for sh, b, c in mats:
        sp.mgpuDestroyCuSparseLtSpMat(sh.addr, s)
        sp.mgpuDestroyCuSparseLtDnMat(b.addr, s)
        sp.mgpuDestroyCuSparseLtDnMat(c.addr, s)
    assert sp.count("cusparseLtMatmul") == 10 and sp.count("cusparseLtMatmulPlanDestroy") == 0
    assert "failed" not in capfd.readouterr().err


def test_kept_plans_are_bounded_per_device(make_sparse):
    """At most 16 idle plans per device: the 17th given back is destroyed."""
    sp = make_sparse()
    sp.mgpuCreateSparseLtEnv()
    s = sp.mgpuStreamCreate()
    mats = []
    for _ in range(17):
        sh, b, c = Reserved(SPMAT), Reserved(DNMAT), Reserved(DNMAT)
        sp.mgpuCusparseLtCreate2To4SpMat(sh.addr, 16, 16, None, CUDA_R_16F, s)
        sp.mgpuCreateCuSparseLtDnMat(b.addr, 16, 16, None, CUDA_R_16F, s)
        sp.mgpuCreateCuSparseLtDnMat(c.addr, 16, 16, None, CUDA_R_16F, s)
        sp.mgpuCuSparseLtSpMMBufferSize((ctypes.c_int64 * 3)(), 0, 0, sh.addr, b.addr, c.addr, 0,
                                        2, s)
        mats.append((sh, b, c))
    for sh, b, c in mats:
        sp.mgpuDestroyCuSparseLtSpMat(sh.addr, s)
    assert sp.count("cusparseLtMatmulPlanInit") == 17
    assert sp.count("cusparseLtMatmulPlanDestroy") == 1
    # the one destroyed plan's own descriptors, and the 17 matrices' 2:4 descriptors
    assert sp.count("cusparseLtMatDescriptorDestroy") == 3 + 17


def test_kept_plan_flag_is_zero_again_after_a_matrix_that_is_not_2to4(make_sparse, capfd,
                                                                      monkeypatch):
    sp = make_sparse()
    sp.mgpuCreateSparseLtEnv()
    s = sp.mgpuStreamCreate()
    lt_step(sp, s)
    monkeypatch.setenv("FAKECUSPARSELT_NOT_24", "1")
    capfd.readouterr()
    lt_step(sp, s)
    assert capfd.readouterr().err.count("not 2:4") == 1
    monkeypatch.delenv("FAKECUSPARSELT_NOT_24")
    st0 = sp.rt.stats()
    lt_step(sp, s)
    assert "not 2:4" not in capfd.readouterr().err
    st1 = sp.rt.stats()
    assert st1["alloc_hits"] + st1["alloc_misses"] - st0["alloc_hits"] - st0["alloc_misses"] == 6
    assert sp.count("cusparseLtMatmulPlanInit") == 1


def test_without_room_for_records_plans_are_made_per_call_as_upstream(make_sparse):
    """cuSPARSELt 0.5 (11024-byte structs) fills the reserved space: no kept plans."""
    sp = make_sparse(lt_version=502)
    sp.mgpuCreateSparseLtEnv()
    s = sp.mgpuStreamCreate()
    for _ in range(3):
        lt_step(sp, s)
    assert sp.count("cusparseLtMatmulPlanInit") == 3 and sp.count("cusparseLtMatmulPlanDestroy") == 3


@pytest.fixture(scope="module")
def sparse_steps(tmp_path_factory):
    """tests/drivers/sparse_steps.c linked with the object MLIR 19 made from sparse_gpu.mlir."""
    import subprocess
    from conftest import CC, DATA
    if CC is None:
        pytest.skip("no C compiler")
    exe = tmp_path_factory.mktemp("sparse_steps") / "sparse_steps"
    subprocess.run([CC, "-std=c11", "-D_GNU_SOURCE", "-O1", "-o", str(exe),
                    str(DRIVERS / "sparse_steps.c"), str(DATA / "mlir" / "sparse_gpu_llvm19.o"),
                    *mgpu_cached.ldflags().split(), "-lm", "-ldl"], check=True)
    return exe


def mlir_steps(exe, fake_driver, fake_sparse, tmp_path, disable, program="matmul24", steps=3):
    """Per step of the generated code: the cuSPARSE/cuSPARSELt calls (a Counter) and the driver
    calls of the allocation kind (the allocator's own thread makes none of these)."""
    import os
    import subprocess
    from collections import Counter
    drv, lib = tmp_path / f"drv{int(disable)}.so", tmp_path / f"sp{int(disable)}.so"
    shutil.copyfile(fake_driver, drv)
    shutil.copyfile(fake_sparse, lib)
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(drv), MGPU_CACHED_CUSPARSE=str(lib),
               MGPU_CACHED_CUSPARSELT=str(lib))
    env.pop("MGPU_CACHED_DISABLE", None)
    if disable:
        env["MGPU_CACHED_DISABLE"] = "1"
    p = subprocess.run([str(exe), program, str(steps)], env=env, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0 and p.stderr == "", p.stdout + p.stderr
    spans = {}
    for line in p.stdout.splitlines():
        span, kind, calls = (line.split(" ", 2) + [""])[:3]
        spans.setdefault(span, {})[kind] = Counter(x for x in calls.split(",") if x)
    return [spans[str(k)] for k in range(steps)]


def test_mlir_2to4_step_makes_no_more_library_calls_than_stock(sparse_steps, fake_driver_build,
                                                             fake_sparse_build, tmp_path):
    """The 2:4 code MLIR 19 generates (benchmarks/mlir/sparse), run four times: from the second
    execution on, cached mode makes no plan, and no cuSPARSELt call more often than stock. Driver
    streams: a step has three streams live at once; the pool makes at most one more, its spare, in
    some later step (a destroyed stream is reused once a synchronisation or the allocator's fence
    found it idle, streams/pool.c; the fence runs on the reclaimer thread, so which step makes the
    spare, if any in four, depends on when its rounds run). Stock makes four per step."""
    cached = mlir_steps(sparse_steps, fake_driver_build, fake_sparse_build, tmp_path, False, steps=4)
    stock = mlir_steps(sparse_steps, fake_driver_build, fake_sparse_build, tmp_path, True, steps=4)
    assert sum(c["drv"]["cuStreamCreate"] for c in cached[1:]) <= 1
    assert all(s["drv"]["cuStreamCreate"] == 4 for s in stock)
    for c, s in zip(cached[2:], stock[2:]):
        assert all(c["sp"][k] <= s["sp"][k] for k in c["sp"]), (c["sp"], s["sp"])
        assert sum(c["sp"].values()) == 12 and sum(s["sp"].values()) == 17
        assert not any(c["sp"][k] for k in LT_PLAN_CALLS)
        assert c["sp"]["cusparseLtMatmul"] == 1 and c["sp"]["cusparseLtSpMMACompress"] == 1
        # driver calls only the program's thread makes: no allocation of the library's own (the
        # flag), no stream destroyed (pooled; made: the spare above), the check's one synchronisation
        for call in ("cuMemFree", "cuStreamDestroy", "cuMemFreeAsync"):
            assert c["drv"][call] == 0, call
        assert c["drv"]["cuMemAlloc"] <= 6  # the program's six buffers at most (cache misses)
        assert s["drv"]["cuMemAlloc"] == 7 and s["drv"]["cuMemFree"] == 7


def test_chain_replay_submits_pending_launches_before_a_sparse_call(make_sparse):
    """Opt-in chain replay (chain.h): a sparse entry point observes its stream like any other, so
    launches deferred on the stream are submitted before the cuSPARSE call is enqueued behind them
    (not at the next synchronisation, after it); the SpMV's result is unchanged."""
    from conftest import GRAPH_EAGER
    from test_chain_replay import kernels, ran
    from test_graph_launch import Args, launch
    sp = make_sparse(env={"MGPU_CACHED_GRAPH": "1", "MGPU_CACHED_CHAIN": "1",
                          "FAKECUDA_PARAM_SIZES": "8,4", "MGPU_CACHED_STREAM_HANDLES": "tagged",
                          **GRAPH_EAGER})
    rt = sp.rt
    f, = kernels(rt, "f")
    sp.mgpuCreateSparseEnv()
    s = sp.mgpuStreamCreate()
    calls = {"mgpuCreateDnVec": 0, "mgpuSpMVBufferSize": 0, "mgpuSpMV": 0, "mgpuDestroyDnVec": 0}

    def deferred_then(name):
        real = getattr(sp.lib, name)

        def call(*args):
            calls[name] += 1
            before = len(ran(rt))
            launch(rt, f, s, Args(100 + before, 0))
            assert len(ran(rt)) == before  # deferred
            out = real(*args)
            assert len(ran(rt)) == before + 1, name  # submitted by the sparse entry point
            return out
        return call
    for name in calls:
        setattr(sp, name, deferred_then(name))
    A, x, y = matrix()
    out, _, _ = spmv_once(sp, s, A, x, y)
    assert out == expected(A, x, y)
    assert calls == {"mgpuCreateDnVec": 2, "mgpuSpMVBufferSize": 1, "mgpuSpMV": 1,
                     "mgpuDestroyDnVec": 2}
    assert ran(rt) == list(range(100, 106))
    sp.mgpuStreamDestroy(s)
    sp.mgpuDestroySparseEnv()
