"""Side-by-side cost of mgpuMemAlloc/mgpuMemFree: the caching allocator (default), the stock calls
with MGPU_CACHED_ALLOCATOR=0, and full stock behaviour (MGPU_CACHED_DISABLE=1), in one process.

Builds benchmarks/alloc_bench.c, loads three copies of the installed libmgpu_cached.so (each copy
is its own instance, configured before first use) and prints the table alloc_bench prints: µs per
alloc+free pair for device and host_shared memory from 256 B to 64 MiB, host_shared with a kernel
touching it, and a two-stream step with 3 host_shared buffers against the same step with buffers
made once. Needs a GPU (or MGPU_CACHED_CUDA_DRIVER pointing at a fake driver) and a C compiler.
"""
import argparse
import shutil
import subprocess
import tempfile
from pathlib import Path

import mgpu_cached

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7, help="interleaved rounds per line (median)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        exe = t / "alloc_bench"
        subprocess.run(["cc", "-std=c11", "-O2", "-o", str(exe),
                        str(ROOT / "benchmarks" / "alloc_bench.c"), "-ldl"], check=True)
        libs = []
        for name in ("cached", "alloc0", "stock"):
            p = t / f"libmgpu_cached_{name}.so"
            shutil.copyfile(mgpu_cached.library_path(), p)
            libs.append(str(p))
        fatbin = str(ROOT / "tests" / "data" / "alloc_kernels.fatbin")
        subprocess.run([str(exe), *libs, fatbin, str(args.rounds)], check=True)


if __name__ == "__main__":
    main()
