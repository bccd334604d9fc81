# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Probe: what mgpuModuleLoad does on the real driver with blobs whose headers point past their end
(an ELF whose section header table is said to lie 1 GiB away; a fatbin claiming a 1 GiB payload),
and with short blobs that end at the end of a page followed by an unreadable (PROT_NONE) page: a
2-byte PTX text "\n\0", the first 2 bytes of an ELF or fatbin magic, and an unmapped pointer.

Cached mode checks that the header's tables and the blob's end lie in mapped memory before reading
them, and reports MGPU_CACHED_INVALID_IMAGE; stock behaviour hands the bytes to cuModuleLoadData.
Each case runs in its own process; the exit status and stderr are printed. Run on a GPU machine after `pip install .`:  python3 benchmarks/probe_corrupt_blob.py
"""

import struct
import subprocess
import sys

CHILD = r"""
import ctypes, struct, sys
import mgpu_cached
lib = ctypes.CDLL(mgpu_cached.library_path())
lib.mgpuModuleLoad.restype = ctypes.c_void_p
lib.mgpuModuleLoad.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
kind = sys.argv[1]
if kind.endswith("-pageend") or kind == "unmapped":
    libc = ctypes.CDLL(None)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    pg = 4096
    base = libc.mmap(None, 2 * pg, 3, 0x22, -1, 0)
    if kind == "unmapped":
        libc.munmap(base, 2 * pg)
        addr = base
    else:
        libc.mprotect(base + pg, pg, 0)
        data = {"ptx2-pageend": b"\n\0", "elf2-pageend": b"\x7fE",
                "fatbin2-pageend": b"\x50\xed"}[kind]
        addr = base + pg - len(data)
        ctypes.memmove(addr, data, len(data))
    m = lib.mgpuModuleLoad(addr, 0)
    print("module:", "NULL" if not m else hex(m))
    sys.exit(0)
if kind == "elf":
    h = bytearray(64)
    h[0:4] = b"\x7fELF"
    h[4], h[5], h[6] = 2, 1, 1
    struct.pack_into("<HHIQQQIHHHHHH", h, 16, 2, 190, 1, 0, 0, 1 << 30, 0, 64, 0, 0, 64, 3, 0)
    data = bytes(h)
else:
    data = struct.pack("<IHHQ", 0xBA55ED50, 1, 16, 1 << 30)
buf = ctypes.create_string_buffer(data, len(data))
m = lib.mgpuModuleLoad(buf, len(data))
print("module:", "NULL" if not m else hex(m))
"""


def main() -> int:
    for kind in ("elf", "fatbin", "ptx2-pageend", "elf2-pageend", "fatbin2-pageend", "unmapped"):
        for env_disable in ("0", "1"):
            env = {"MGPU_CACHED_DISABLE": env_disable}
            p = subprocess.run([sys.executable, "-c", CHILD, kind], capture_output=True, text=True,
                               env={**__import__("os").environ, **env}, timeout=120)
            mode = "stock behaviour" if env_disable == "1" else "cached"
            print(f"{kind:15} {mode:15} exit {p.returncode:4}  stdout: {p.stdout.strip()!r}  "
                  f"stderr: {p.stderr.strip()!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
