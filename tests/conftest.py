# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Shared fixtures: the installed library, the recording fake driver, blob builders.

CPU tests load a *fresh copy* of libmgpu_cached.so (and of the fake driver) for each test: a copy
at a new path is a new instance with its own caches, pools and configuration, so each test sees a
clean process-like state without a subprocess.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import shutil
import struct
import subprocess
import time
from pathlib import Path
from typing import Dict, Iterable, Optional

import pytest

import mgpu_cached

ROOT = Path(__file__).resolve().parent.parent
DRIVERS = ROOT / "tests" / "drivers"
DATA = ROOT / "tests" / "data"
CC = shutil.which("cc") or shutil.which("gcc")

_counter = itertools.count()

# The CPU tests drive the fake CUDA driver; with the real HIP runtime installed on the machine the
# automatic backend choice would probe it. HIP tests choose their backend explicitly.
os.environ.setdefault("MGPU_CACHED_BACKEND", "cuda")
# The graph launch path (issue 12) follows the library's default unless MGPU_CACHED_GRAPH is set:
# run the suite with MGPU_CACHED_GRAPH=0 and =1 to test both ways (its own tests set it).
vp = ctypes.c_void_p


def cuda_include() -> Optional[Path]:
    """The CUDA toolkit's include folder (the one holding cuda.h), or None."""
    for d in [os.environ.get("CUDA_PATH", ""), os.environ.get("CUDA_HOME", ""), "/usr/local/cuda",
              "/usr"]:
        if d and (Path(d) / "include" / "cuda.h").is_file():
            return Path(d) / "include"
    return None


def compile_shared(source: Path, out: Path, extra: Iterable[str] = ()) -> Path:
    if CC is None:
        pytest.skip("no C compiler (cc/gcc) to build the test drivers")
    cmd = [CC, "-std=c11", "-D_GNU_SOURCE", "-O1", "-g", "-fPIC", "-shared", "-pthread",
           f"-I{ROOT / 'csrc'}", "-o", str(out), str(source), "-ldl", *extra]
    subprocess.run(cmd, check=True)
    return out


def compile_program(folder: Path, name: str, text: str, args: Iterable[str]) -> Path:
    """A program from the C source `text`, written to folder/name.c and built there into
    folder/name with `cc -std=c11 -D_GNU_SOURCE ARGS` (skips without a C compiler)."""
    if CC is None:
        pytest.skip("no C compiler")
    src = folder / f"{name}.c"
    src.write_text(text)
    exe = folder / name
    subprocess.run([CC, "-std=c11", "-D_GNU_SOURCE", "-o", str(exe), str(src), *args], check=True)
    return exe


@pytest.fixture(scope="session")
def fake_driver_build(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("drivers") / "libfakecuda.so"
    return compile_shared(DRIVERS / "fakecuda.c", out)


# ---- blobs -------------------------------------------------------------------------------------

def ptx(*names: str, pad: str = "") -> bytes:
    body = "".join(f".visible .entry {n}(\n)\n{{\n ret;\n}}\n" for n in names)
    return f"//\n.version 8.0\n.target sm_90\n.address_size 64\n{pad}{body}".encode() + b"\0"


def fatbin(*names: str) -> bytes:
    """A fatbin container holding one uncompressed PTX entry (64-byte entry header: kind 1, the
    entry header's size, the payload's size, no compressed size, flags 0x11)."""
    payload = ptx(*names)
    payload += b"\0" * (-len(payload) % 8)
    entry = struct.pack("<HHIQIIHHIIIQQQ", 1, 0x101, 64, len(payload), 0, 64, 0, 8, 90, 0, 0,
                        0x11, 0, 0)
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(entry) + len(payload)) + entry + payload


def elf(*names: str) -> bytes:
    """A minimal 64-bit ELF (EM_CUDA): header, one PROGBITS section holding the entry names, one
    NOBITS section (no bytes in the file), the section name table, then the section header table
    (the end of the file). No data section or symbol: no module-scope state (blob_state.h)."""
    text = ptx(*names)
    text += b"\0" * (-len(text) % 8)
    names_tab = b"\0.text\0.nv.shared.k\0.shstrtab\0"
    names_tab += b"\0" * (-len(names_tab) % 8)
    shoff = 64 + len(text) + len(names_tab)
    ehdr = bytearray(64)
    ehdr[0:4] = b"\x7fELF"
    ehdr[4], ehdr[5], ehdr[6] = 2, 1, 1
    struct.pack_into("<HHIQQQIHHHHHH", ehdr, 16, 2, 190, 1, 0, 0, shoff, 0, 64, 0, 0, 64, 4, 3)
    null = bytes(64)
    progbits = struct.pack("<IIQQQQIIQQ", 1, 1, 0, 0, 64, len(text), 0, 0, 8, 0)
    nobits = struct.pack("<IIQQQQIIQQ", 7, 8, 0, 0, 1 << 20, 4096, 0, 0, 8, 0)
    strtab = struct.pack("<IIQQQQIIQQ", 20, 3, 0, 0, 64 + len(text), len(names_tab), 0, 0, 1, 0)
    return bytes(ehdr) + text + names_tab + null + progbits + nobits + strtab


# ---- the runtime under test ---------------------------------------------------------------------

_SIGNATURES = {
    "mgpuModuleLoad": (vp, [vp, ctypes.c_size_t]),
    "mgpuModuleLoadJIT": (vp, [vp, ctypes.c_int, ctypes.c_size_t]),
    "mgpuModuleUnload": (None, [vp]),
    "mgpuModuleGetFunction": (vp, [vp, ctypes.c_char_p]),
    "mgpuLaunchKernel": (None, [vp] + [ctypes.c_ssize_t] * 6 +
                         [ctypes.c_int32, vp, vp, vp, ctypes.c_size_t]),
    "mgpuLaunchClusterKernel": (None, [vp] + [ctypes.c_ssize_t] * 9 +
                                [ctypes.c_int32, vp, vp, vp, ctypes.c_size_t]),
    "mgpuLaunchKernelCooperative": (None, [vp] + [ctypes.c_ssize_t] * 9 +
                                    [ctypes.c_int32, vp, vp, vp]),
    "mgpuStreamCreate": (vp, []),
    "mgpuStreamDestroy": (None, [vp]),
    "mgpuStreamSynchronize": (None, [vp]),
    "mgpuStreamWaitEvent": (None, [vp, vp]),
    "mgpuEventCreate": (vp, []),
    "mgpuEventDestroy": (None, [vp]),
    "mgpuEventSynchronize": (None, [vp]),
    "mgpuEventRecord": (None, [vp, vp]),
    "mgpuMemAlloc": (vp, [ctypes.c_uint64, vp, ctypes.c_bool]),
    "mgpuMemFree": (None, [vp, vp]),
    "mgpuMemcpy": (None, [vp, vp, ctypes.c_size_t, vp]),
    "mgpuMemset32": (None, [vp, ctypes.c_uint32, ctypes.c_size_t, vp]),
    "mgpuMemset16": (None, [vp, ctypes.c_uint16, ctypes.c_size_t, vp]),
    "mgpuMemHostRegister": (None, [vp, ctypes.c_uint64]),
    "mgpuMemHostUnregister": (None, [vp]),
    "mgpuMemHostRegisterMemRef": (None, [ctypes.c_int64, vp, ctypes.c_int64]),
    "mgpuMemHostUnregisterMemRef": (None, [ctypes.c_int64, vp, ctypes.c_int64]),
    "mgpuSetDefaultDevice": (None, [ctypes.c_int32]),
    "mgpuTensorMapEncodeTiledMemref": (vp, [ctypes.c_int64, vp] + [ctypes.c_int] * 5 + [vp]),
}


def bind(lib: ctypes.CDLL) -> ctypes.CDLL:
    for name, (res, args) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


class Fake:
    """Control interface of one fake driver instance."""

    def __init__(self, path: Path) -> None:
        self.lib = ctypes.CDLL(str(path))
        for name, res, args in [
            ("fake_count", ctypes.c_long, [ctypes.c_char_p]),
            ("fake_log", ctypes.c_size_t, [ctypes.c_char_p, ctypes.c_size_t]),
            ("fake_fail", ctypes.c_int, [ctypes.c_char_p, ctypes.c_int, ctypes.c_int]),
            ("fake_set_busy_launches", None, [ctypes.c_int]),
            ("fake_complete", None, [vp]),
            ("fake_current_context", vp, []),
            ("fake_primary_context", vp, [ctypes.c_int]),
            ("fake_set_current_context", None, [vp]),
            ("fake_last_launch", ctypes.c_long, [ctypes.c_int]),
            ("fake_last_stream", vp, []),
            ("fake_last_function", vp, []),
            ("fake_function_device", ctypes.c_int, [vp]),
            ("fake_function_smem_limit", ctypes.c_int, [vp]),
            ("fake_stream_flags", ctypes.c_int, [vp]),
            ("fake_stream_device", ctypes.c_int, [vp]),
            ("fake_registered_size", ctypes.c_size_t, [vp]),
            ("fake_reset", None, []),
            # graph launches (fakecuda.c only)
            ("fake_last_arg", ctypes.c_long, [ctypes.c_int]),
            ("fake_live_execs", ctypes.c_long, []),
            ("fake_arg_log", ctypes.c_int, [ctypes.POINTER(ctypes.c_long), ctypes.c_int]),
        ]:
            if name in ("fake_last_arg", "fake_live_execs", "fake_arg_log") and \
                    not hasattr(self.lib, name):
                continue  # fakehip.c has no graph model
            fn = getattr(self.lib, name)
            fn.restype, fn.argtypes = res, args

    def count(self, field: str) -> int:
        n = self.lib.fake_count(field.encode())
        assert n >= 0, f"unknown driver entry point {field}"
        return n

    def launches(self) -> int:
        """Kernel launches that reached the driver, whichever way (cuLaunchKernel, or cuGraphLaunch
        of the graph launch path, issue 12)."""
        return self.count("cuLaunchKernel") + self.count("cuGraphLaunch")

    def counts(self, *fields: str) -> Dict[str, int]:
        return {f: self.count(f) for f in fields}

    def arg_log(self) -> list:
        """The first argument of every kernel the fake ran (cuLaunchKernel or graph node), in order."""
        buf = (ctypes.c_long * 4096)()
        return list(buf[:self.lib.fake_arg_log(buf, 4096)])

    def log(self) -> list:
        buf = ctypes.create_string_buffer(1 << 16)
        self.lib.fake_log(buf, len(buf))
        return [x for x in buf.value.decode().split(",") if x]

    # Stream and event handles of the library are not driver objects (pool.h); the fake's
    # per-object controls take the driver object, which Rt installs a translation for.
    translate = staticmethod(lambda h: h)

    def fake_complete(self, stream) -> None:
        self.lib.fake_complete(self.translate(stream))

    def fake_stream_device(self, stream) -> int:
        return self.lib.fake_stream_device(self.translate(stream))

    def fake_stream_flags(self, stream) -> int:
        return self.lib.fake_stream_flags(self.translate(stream))

    def __getattr__(self, name):
        return getattr(self.lib, name)


def library_handle(h) -> bool:
    """True for a stream or event handle the library made (tag 0xC5 / 0xCE in the top byte)."""
    if isinstance(h, ctypes.c_void_p):
        h = h.value
    return isinstance(h, int) and bool(h) and (h >> 56) in (0xC5, 0xCE)


class Rt:
    """A fresh runtime instance bound to a fresh fake driver instance."""

    def __init__(self, lib_path: Path, fake_path: Path) -> None:
        self.fake = Fake(fake_path)
        self.lib = bind(ctypes.CDLL(str(lib_path)))
        self.info = mgpu_cached.Runtime(lib_path)
        self.fake.translate = lambda h: self.pin(h) if library_handle(h) else h

    def __getattr__(self, name):
        return getattr(self.lib, name)

    def stats(self) -> Dict[str, int]:
        return self.info.stats()

    def launch(self, fn, smem: int = 0, stream=None, grid=(1, 1, 1), block=(32, 1, 1)) -> None:
        self.lib.mgpuLaunchKernel(fn, *grid, *block, smem, stream, None, None, 0)

    def driver_stream(self, fn, stream) -> Optional[int]:
        """The driver stream a launch on `stream` uses now (launches `fn` once and asks the fake;
        unlike mgpu_cached_driver_handle this does not pin the handle)."""
        self.launch(fn, stream=stream)
        return self.fake.fake_last_stream()

    def pin(self, handle) -> Optional[int]:
        """mgpu_cached_driver_handle: the driver object behind a handle (pins it)."""
        f = self.lib.mgpu_cached_driver_handle
        f.restype, f.argtypes = vp, [vp]
        return f(handle)


def _fresh_runtime(tmp_path: Path, monkeypatch, fake_build: Path, tag: str,
                   driver_env: Dict[str, str], disable: bool,
                   env: Optional[Dict[str, str]]) -> Rt:
    """Fresh copies of the library and of a fake driver (new instances), and the environment:
    driver_env may name "{fake}" for the copied fake driver's path."""
    n = next(_counter)
    lib = tmp_path / f"libmgpu_cached_{tag}{n}.so"
    shutil.copyfile(mgpu_cached.library_path(), lib)
    fake = tmp_path / f"{fake_build.stem}_{n}.so"
    shutil.copyfile(fake_build, fake)
    for k, v in driver_env.items():
        monkeypatch.setenv(k, v.replace("{fake}", str(fake)))
    if disable:
        monkeypatch.setenv("MGPU_CACHED_DISABLE", "1")
    else:
        monkeypatch.delenv("MGPU_CACHED_DISABLE", raising=False)
    for k, v in (env or {}).items():
        monkeypatch.setenv(k, v)
    return Rt(lib, fake)


@pytest.fixture
def make_runtime(tmp_path, monkeypatch, fake_driver_build):
    def make(devices: int = 1, disable: bool = False, driver: Optional[str] = None,
             env: Optional[Dict[str, str]] = None) -> Rt:
        return _fresh_runtime(tmp_path, monkeypatch, fake_driver_build, "", {
            "MGPU_CACHED_CUDA_DRIVER": driver if driver is not None else "{fake}",
            "FAKECUDA_DEVICES": str(devices)}, disable, env)

    return make


# The graph path's thresholds before run N3 (a kernel's exec at its second launch, the process's
# first exec at once): the tests of the graph path's mechanics (execs per stream, updates,
# argument sets, failures, chains) take them, so that two launches reach the steady state;
# test_graph_launch.py's test_the_exec_is_built_at_the_fourth_launch_after_100_in_the_process
# pins the defaults (MGPU_CACHED_GRAPH_AFTER=4, MGPU_CACHED_GRAPH_FIRST_AFTER=100).
GRAPH_EAGER = {"MGPU_CACHED_GRAPH_AFTER": "2", "MGPU_CACHED_GRAPH_FIRST_AFTER": "0"}


@pytest.fixture
def rt(make_runtime) -> Rt:
    return make_runtime()


def until(cond, what: str, timeout: float = 30.0) -> None:
    """Wait for one of the library's threads (the reclaimer): a guard against hangs, not a timing
    assertion."""
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.001)


def blob_buffer(data: bytes, size: Optional[int] = None):
    """A C buffer holding `data` at a fixed address (size >= len(data))."""
    return ctypes.create_string_buffer(data, size or len(data))


def overwrite(buf, data: bytes) -> None:
    """Put different bytes at the same address (a JIT engine reusing freed memory)."""
    assert len(data) <= len(buf)
    ctypes.memmove(buf, data, len(data))


# ---- the HIP backend: the same runtime over a recording fake HIP runtime (tests/drivers/fakehip.c)

@pytest.fixture(scope="session")
def fake_hip_build(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("drivers") / "libfakehip.so"
    return compile_shared(DRIVERS / "fakehip.c", out)


@pytest.fixture
def make_hip_runtime(tmp_path, monkeypatch, fake_hip_build):
    """Like make_runtime, on the HIP backend (MGPU_CACHED_BACKEND=hip, the fake HIP runtime)."""
    def make(devices: int = 1, disable: bool = False, runtime: Optional[str] = None,
             env: Optional[Dict[str, str]] = None) -> Rt:
        return _fresh_runtime(tmp_path, monkeypatch, fake_hip_build, "hip_", {
            "MGPU_CACHED_BACKEND": "hip",
            "MGPU_CACHED_HIP_RUNTIME": runtime if runtime is not None else "{fake}",
            "FAKEHIP_DEVICES": str(devices)}, disable, env)

    return make


@pytest.fixture
def hip_rt(make_hip_runtime) -> Rt:
    return make_hip_runtime()
