# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""What the hit check costs: ns per mgpuModuleLoad + mgpuModuleUnload on a cached blob, by blob
size (the 64-byte row is the floor: two ctypes calls and the cache lookup), for a blob on the heap
(compared on every hit), a blob in the .rodata of a shared library (not compared while no object is
loaded or unloaded: the default, MGPU_CACHED_HIT_CHECK=auto) and the same blob with
MGPU_CACHED_HIT_CHECK=full (compared, as before the generation check). Then what the loader queries
cost on their own (benchmarks/rodata_cost.c). The check is host-only work, so this runs against the
recording fake driver (tests/drivers/fakecuda.c) and needs no GPU. Medians of 5 runs."""
import ctypes
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import mgpu_cached

ROOT = Path(__file__).resolve().parent.parent
SIZES = [64, 4 << 10, 64 << 10, 1 << 20, 8 << 20]


def blob_text(size: int) -> bytes:
    text = b"//\n.visible .entry k(\n)\n{\n ret;\n}\n"
    return text + b"/" * (size - len(text) - 1) + b"\0"


def blob_library(d: Path, size: int) -> Path:
    """A shared library whose .rodata holds blob_text(size) as mc_bench_blob (.incbin)."""
    data = d / f"blob{size}.bin"
    data.write_bytes(blob_text(size))
    src = d / f"blob{size}.c"
    src.write_text('__asm__(".section .rodata\\n.globl mc_bench_blob\\n.p2align 6\\n"\n'
                   f'        "mc_bench_blob:\\n.incbin \\"{data}\\"\\n.previous");\n')
    out = d / f"libblob{size}.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(out), str(src)], check=True)
    return out


def runtime(d: Path, fake: Path, tag: str, env: dict) -> ctypes.CDLL:
    """A fresh instance of the library (a copy at a new path) with its own configuration."""
    lib_path = d / f"libmgpu_cached_{tag}.so"
    shutil.copyfile(mgpu_cached.library_path(), lib_path)
    fake_copy = d / f"libfakecuda_{tag}.so"
    shutil.copyfile(fake, fake_copy)
    os.environ.update(env, MGPU_CACHED_CUDA_DRIVER=str(fake_copy))
    lib = ctypes.CDLL(str(lib_path))
    lib.mgpuModuleLoad.restype = ctypes.c_void_p
    lib.mgpuModuleLoad.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    lib.mgpuModuleUnload.argtypes = [ctypes.c_void_p]
    return lib  # its configuration is read at its first call: call it before changing env


def hit_ns(cases, size: int) -> list:
    """ns per hit for each (library, address) in cases, measured in interleaved rounds."""
    for lib, addr in cases:
        lib.mgpuModuleUnload(lib.mgpuModuleLoad(addr, 0))
    n = max(200, (64 << 20) // size) if size >= (64 << 10) else 20000
    runs = [[] for _ in cases]
    for _ in range(5):
        for i, (lib, addr) in enumerate(cases):
            t0 = time.perf_counter()
            for _ in range(n):
                lib.mgpuModuleUnload(lib.mgpuModuleLoad(addr, 0))
            runs[i].append((time.perf_counter() - t0) / n * 1e9)
    return [statistics.median(r) for r in runs]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        fake = d / "libfakecuda.so"
        subprocess.run(["cc", "-O2", "-fPIC", "-shared", "-pthread", "-o", str(fake),
                        str(ROOT / "tests/drivers/fakecuda.c")], check=True)
        libs = {size: blob_library(d, size) for size in SIZES}
        heap = {size: ctypes.create_string_buffer(blob_text(size), size) for size in SIZES}
        rodata = {}
        for size in SIZES:
            so = ctypes.CDLL(str(libs[size]))
            rodata[size] = ctypes.addressof(ctypes.c_char.in_dll(so, "mc_bench_blob"))
        auto = runtime(d, fake, "auto", {"MGPU_CACHED_HIT_CHECK": "auto"})
        auto.mgpuModuleUnload(auto.mgpuModuleLoad(rodata[SIZES[0]], 0))  # configured now
        full = runtime(d, fake, "full", {"MGPU_CACHED_HIT_CHECK": "full"})
        rows = {size: hit_ns([(auto, ctypes.addressof(heap[size])), (auto, rodata[size]),
                              (full, rodata[size])], size) for size in SIZES}
        print(f"{'blob bytes':>10} {'heap':>12} {'.rodata':>12} {'.rodata, full':>14}"
              "   (ns per load+unload hit)")
        for size in SIZES:
            print(f"{size:>10}" + "".join(f" {v:>{w}.0f}" for v, w in zip(rows[size], [12, 12, 14])))
        exe = d / "rodata_cost"
        subprocess.run(["cc", "-O2", "-std=c11", "-D_GNU_SOURCE", "-pthread", "-I", str(ROOT / "csrc"),
                        "-o", str(exe), str(ROOT / "benchmarks/rodata_cost.c"),
                        str(ROOT / "csrc/support/rodata.c"), "-ldl"], check=True)
        size = 1 << 20
        print(subprocess.run([str(exe), str(libs[size]), str(size)], check=True,
                             capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    sys.exit(main())
