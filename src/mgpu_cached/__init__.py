"""mgpu-cached: a drop-in replacement for MLIR's CUDA runtime wrappers (``libmlir_cuda_runtime``).

The package ships ``libmgpu_cached.so`` and tells you how to use it::

    import mgpu_cached
    mgpu_cached.library_path()   # .../mgpu_cached/lib/libmgpu_cached.so
    mgpu_cached.ldflags()        # "-L... -lmgpu_cached -Wl,-rpath,..."
    mgpu_cached.preload()        # "LD_PRELOAD=.../libmgpu_cached.so"
    mgpu_cached.stats()          # {"module_loads": ..., ...} of this process

The same is printed by the ``mgpu-cached`` command (``--libdir``, ``--ldflags``, ``--preload``,
``stats``).
"""

from ._paths import (
    LIBRARY_NAME,
    STOCK_LIBRARY_NAME,
    ldflags,
    libdir,
    library_path,
    preload,
    stock_libdir,
)
from ._native import Runtime, runtime, stats

__version__ = "0.1.0"

__all__ = [
    "LIBRARY_NAME",
    "STOCK_LIBRARY_NAME",
    "Runtime",
    "__version__",
    "ldflags",
    "libdir",
    "library_path",
    "preload",
    "runtime",
    "stats",
    "stock_libdir",
]
