# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""MLIR-style programs around driver faults (issue 19 item 5: G7 context reset, G12 sticky errors),
run in a child process by tests/test_faults.py (a crash must not take pytest down):

    python fault_programs.py PROGRAM LIBRARY FAKE_DRIVER

The environment chooses the driver (MGPU_CACHED_CUDA_DRIVER) and the mode (MGPU_CACHED_DISABLE).
Prints one JSON line of results on stdout; the library's reports go to stderr."""

from __future__ import annotations

import ctypes
import json
import sys

from conftest import bind, ptx

vp = ctypes.c_void_p
N = 1 << 20  # elements of a phase's buffer (the fake copies host memory: 4 MiB)


def phase(lib, fake, blob, value: int) -> dict:
    """One complete MLIR call: load, alloc, fill, sync, copy back, check, free, destroy, unload.
    The fake runs no kernel: the fill is a memset (what the kernel would write); the launch is
    made for its driver calls."""
    m = lib.mgpuModuleLoad(blob, len(blob))
    f = lib.mgpuModuleGetFunction(m, b"k_fill") if m else None
    s = lib.mgpuStreamCreate()
    p = lib.mgpuMemAlloc(4 * N, s, False)
    out = {"module": bool(m), "function": bool(f), "stream": bool(s), "alloc": bool(p)}
    if not p:
        out["wrong"] = -1
    else:
        lib.mgpuMemset32(p, value, N, s)
        lib.mgpuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, None, None, 0)
        lib.mgpuStreamSynchronize(s)
        h = (ctypes.c_uint32 * N)()
        lib.mgpuMemcpy(h, p, 4 * N, s)
        lib.mgpuStreamSynchronize(s)
        out["wrong"] = sum(1 for x in h if x != value)
    lib.mgpuMemFree(p, s)
    lib.mgpuStreamDestroy(s)
    lib.mgpuModuleUnload(m)
    return out


def mark(what: str) -> None:
    sys.stdout.flush()
    sys.stderr.write(f"@@{what}\n")
    sys.stderr.flush()


def g7(lib, fake) -> dict:
    """cuDevicePrimaryCtxReset between complete MLIR calls (cudaDeviceReset does it)."""
    blob = ctypes.create_string_buffer(ptx("k_fill"))
    res = {}
    mark("phase1")
    res["phase1"] = phase(lib, fake, blob, 7)
    mark("reset")
    res["reset"] = fake.cuDevicePrimaryCtxReset_v2(0)
    mark("phase2")
    res["phase2"] = phase(lib, fake, blob, 9)
    mark("phase3")
    res["phase3"] = phase(lib, fake, blob, 11)
    mark("end")
    return res


def g12(lib, fake) -> dict:
    """A device assert (the fake's k_assert kernel), then the calls gpu_exp.c's G12 makes."""
    blob = ctypes.create_string_buffer(ptx("k_fill", "k_assert"))
    m = lib.mgpuModuleLoad(blob, len(blob))
    f = lib.mgpuModuleGetFunction(m, b"k_assert")
    s = lib.mgpuStreamCreate()
    p = lib.mgpuMemAlloc(4096, s, False)
    lib.mgpuStreamSynchronize(s)
    # warm the caches as a program's earlier steps would: a stream and a block back in the pools
    s0 = lib.mgpuStreamCreate()
    p0 = lib.mgpuMemAlloc(4096, s0, False)
    lib.mgpuMemFree(p0, s0)
    lib.mgpuStreamDestroy(s0)
    mark("launch")
    lib.mgpuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, None, None, 0)
    mark("sync")
    lib.mgpuStreamSynchronize(s)
    mark("streamCreate")
    s2 = lib.mgpuStreamCreate()
    mark("memAlloc")
    q = lib.mgpuMemAlloc(4096, s2, False)
    mark("memFree")
    lib.mgpuMemFree(p, s)
    mark("moduleLoad")
    m2 = lib.mgpuModuleLoad(blob, len(blob))
    mark("eventCreate")
    e = lib.mgpuEventCreate()
    mark("launch2")
    lib.mgpuLaunchKernel(lib.mgpuModuleGetFunction(m, b"k_fill"), 1, 1, 1, 1, 1, 1, 0, s, None,
                         None, 0)
    mark("getFunction")
    g = lib.mgpuModuleGetFunction(m, b"k_fill")
    mark("moduleUnload")
    lib.mgpuModuleUnload(m)
    mark("end")
    return {"stream": bool(s2), "alloc": bool(q), "module": bool(m2), "event": bool(e),
            "function": bool(g)}


def g12_reset(lib, fake) -> dict:
    """A device assert, then the program resets the device (cudaDeviceReset) and goes on."""
    blob = ctypes.create_string_buffer(ptx("k_fill", "k_assert"))
    res = {"phase1": phase(lib, fake, blob, 3)}
    m = lib.mgpuModuleLoad(blob, len(blob))
    s = lib.mgpuStreamCreate()
    lib.mgpuLaunchKernel(lib.mgpuModuleGetFunction(m, b"k_assert"), 1, 1, 1, 1, 1, 1, 0, s, None,
                         None, 0)
    lib.mgpuStreamSynchronize(s)
    res["broken"] = phase(lib, fake, blob, 5)
    res["reset"] = fake.cuDevicePrimaryCtxReset_v2(0)
    res["after1"] = phase(lib, fake, blob, 9)
    res["after2"] = phase(lib, fake, blob, 11)
    return res


def main() -> None:
    program, lib_path, fake_path = sys.argv[1:4]
    fake = ctypes.CDLL(fake_path)
    fake.cuDevicePrimaryCtxReset_v2.argtypes = [ctypes.c_int]
    lib = bind(ctypes.CDLL(lib_path))
    res = {"g7": g7, "g12": g12, "g12_reset": g12_reset}[program](lib, fake)
    sys.stdout.write(json.dumps(res) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
