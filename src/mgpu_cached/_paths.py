"""Where the installed runtime library is, and the flags to use it."""

from __future__ import annotations

import shlex
from pathlib import Path

LIBRARY_NAME = "libmgpu_cached.so"
STOCK_LIBRARY_NAME = "libmlir_cuda_runtime.so"
_LIB_DIR = Path(__file__).resolve().parent / "lib"


def libdir() -> Path:
    """Folder holding ``libmgpu_cached.so``."""
    return _LIB_DIR


def library_path() -> Path:
    """Full path of ``libmgpu_cached.so``. Raises FileNotFoundError if the build is missing."""
    path = _LIB_DIR / LIBRARY_NAME
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: install the package with 'pip install .' "
            "(or run 'python build_runtime.py' in a source checkout)")
    return path


def stock_libdir() -> Path:
    """Folder holding the same library named ``libmlir_cuda_runtime.so``, for builds and
    ``mlir-runner --shared-libs=`` that name the stock library."""
    return _LIB_DIR / "stock-name"


def ldflags() -> str:
    """Linker flags: ``-L<libdir> -lmgpu_cached -Wl,-rpath,<libdir>``."""
    d = shlex.quote(str(libdir()))
    return f"-L{d} -lmgpu_cached -Wl,-rpath,{d}"


def preload() -> str:
    """The ``LD_PRELOAD=...`` assignment that puts the library in front of any other runtime."""
    return f"LD_PRELOAD={shlex.quote(str(library_path()))}"
