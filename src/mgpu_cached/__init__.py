# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""mgpu-cached: a drop-in replacement for MLIR's CUDA runtime wrappers (``libmlir_cuda_runtime``).

The package ships ``libmgpu_cached.so`` and tells you how to use it::

    import mgpu_cached
    mgpu_cached.library_path()   # .../mgpu_cached/lib/libmgpu_cached.so
    mgpu_cached.ldflags()        # "-L... -lmgpu_cached -Wl,-rpath,..."
    mgpu_cached.cflags()         # "-I.../mgpu_cached/include"
    mgpu_cached.preload()        # "LD_PRELOAD=.../libmgpu_cached.so"
    mgpu_cached.stats()          # {"module_loads": ..., ...} of this process
    mgpu_cached.runtime().config()  # the environment variables the library reads

The same is printed by the ``mgpu-cached`` command (``--libdir``, ``--ldflags``, ``--cflags``,
``--preload``, ``--pkgconfig-dir``, ``--cmake-dir``, ``stats``, ``config``).
"""

from ._paths import (
    LIBRARY_NAME,
    STOCK_LIBRARY_NAME,
    cflags,
    cflags_list,
    cmake_dir,
    include_dir,
    ldflags,
    ldflags_list,
    libdir,
    library_path,
    pkgconfig_dir,
    preload,
    preload_env,
    prefix,
    stock_libdir,
)
from ._native import Runtime, Setting, runtime, stats

__version__ = "0.1.0"

__all__ = [
    "LIBRARY_NAME",
    "STOCK_LIBRARY_NAME",
    "Runtime",
    "Setting",
    "__version__",
    "cflags",
    "cflags_list",
    "cmake_dir",
    "include_dir",
    "ldflags",
    "ldflags_list",
    "libdir",
    "library_path",
    "pkgconfig_dir",
    "preload",
    "preload_env",
    "prefix",
    "runtime",
    "stats",
    "stock_libdir",
]
