"""What the hit check costs: ns per mgpuModuleLoad + mgpuModuleUnload on a cached blob, by blob
size (the 64-byte row is the floor: two ctypes calls and the cache lookup). The check is host-only work (header parse + byte comparison), so this runs against the
recording fake driver (tests/drivers/fakecuda.c) and needs no GPU. Medians of 5 runs."""
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import mgpu_cached

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        fake = Path(d) / "libfakecuda.so"
        subprocess.run(["cc", "-O2", "-fPIC", "-shared", "-pthread", "-o", str(fake),
                        str(ROOT / "tests/drivers/fakecuda.c")], check=True)
        os.environ["MGPU_CACHED_CUDA_DRIVER"] = str(fake)
        lib = ctypes.CDLL(str(mgpu_cached.library_path()))
        lib.mgpuModuleLoad.restype = ctypes.c_void_p
        lib.mgpuModuleLoad.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        lib.mgpuModuleUnload.argtypes = [ctypes.c_void_p]
        print(f"{'blob bytes':>10} {'ns per load+unload hit':>24}")
        for size in [64, 4 << 10, 64 << 10, 1 << 20, 8 << 20]:
            text = b"//\n.visible .entry k(\n)\n{\n ret;\n}\n"
            text += b"/" * (size - len(text) - 1) + b"\0"
            buf = ctypes.create_string_buffer(text, len(text))
            lib.mgpuModuleUnload(lib.mgpuModuleLoad(buf, 0))
            n = max(200, (64 << 20) // size)
            runs = []
            for _ in range(5):
                t0 = time.perf_counter()
                for _ in range(n):
                    lib.mgpuModuleUnload(lib.mgpuModuleLoad(buf, 0))
                runs.append((time.perf_counter() - t0) / n * 1e9)
            print(f"{size:>10} {statistics.median(runs):>24.0f}")


if __name__ == "__main__":
    sys.exit(main())
