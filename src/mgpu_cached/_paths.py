# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Where the installed runtime library, headers, pkg-config and CMake files are, and the flags to
use them.

Functions returning one path return it as is (use ``"$(mgpu-cached --libdir)"`` in a shell).
Functions returning flags for a shell (:func:`ldflags`, :func:`cflags`, :func:`preload`) quote each
word, so that ``eval`` or a Makefile keeps a path with spaces in one piece; the ``*_list``
variants give the words for ``subprocess`` without quoting.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Dict, List, Mapping, Optional

LIBRARY_NAME = "libmgpu_cached.so"
STOCK_LIBRARY_NAME = "libmlir_cuda_runtime.so"
_PACKAGE_DIR = Path(__file__).resolve().parent
_LIB_DIR = _PACKAGE_DIR / "lib"


def libdir() -> Path:
    """Folder holding ``libmgpu_cached.so``."""
    return _LIB_DIR


def include_dir() -> Path:
    """Folder holding ``mgpu_cached.h`` (the library's own interface) and ``mgpu_abi.h`` (the
    mgpu* ABI)."""
    return _PACKAGE_DIR / "include"


def pkgconfig_dir() -> Path:
    """Folder holding ``mgpu_cached.pc``: ``PKG_CONFIG_PATH="$(mgpu-cached --pkgconfig-dir)"``."""
    return _LIB_DIR / "pkgconfig"


def cmake_dir() -> Path:
    """Folder holding ``mgpu_cachedConfig.cmake``: ``-Dmgpu_cached_DIR="$(mgpu-cached
    --cmake-dir)"`` (or ``CMAKE_PREFIX_PATH`` set to :func:`prefix`)."""
    return _LIB_DIR / "cmake" / "mgpu_cached"


def prefix() -> Path:
    """The package folder, laid out as an install prefix (``lib/``, ``include/``)."""
    return _PACKAGE_DIR


def library_path() -> Path:
    """Full path of ``libmgpu_cached.so``. Raises FileNotFoundError if the build is missing."""
    path = _LIB_DIR / LIBRARY_NAME
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: install the package with 'pip install .' (in a source checkout, "
            "'pip install -e .' or 'python build_runtime.py' builds it in place)")
    return path


def stock_libdir() -> Path:
    """Folder holding the same library named ``libmlir_cuda_runtime.so`` and
    ``libmlir_rocm_runtime.so``, for builds and ``mlir-runner --shared-libs=`` that name the
    stock library."""
    return _LIB_DIR / "stock-name"


def ldflags_list() -> List[str]:
    """Linker arguments: ``-L<libdir>``, ``-lmgpu_cached``, ``-Wl,-rpath,<libdir>``."""
    d = str(libdir())
    return [f"-L{d}", "-lmgpu_cached", f"-Wl,-rpath,{d}"]


def cflags_list() -> List[str]:
    """Compiler arguments: ``-I<include_dir>``."""
    return [f"-I{include_dir()}"]


def ldflags() -> str:
    """Linker flags for a shell: ``-L<libdir> -lmgpu_cached -Wl,-rpath,<libdir>`` (quoted)."""
    return " ".join(shlex.quote(a) for a in ldflags_list())


def cflags() -> str:
    """Compiler flags for a shell: ``-I<include_dir>`` (quoted)."""
    return " ".join(shlex.quote(a) for a in cflags_list())


def _preload_safe(path: str) -> bool:
    # the dynamic loader splits LD_PRELOAD at spaces and colons
    return not any(c in path for c in " \t\n:")


def preload_env(env: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """The variables to set to put the library in front of any other runtime, given the current
    environment ``env`` (default ``os.environ``; an existing LD_PRELOAD is kept after it). Where the
    library's path holds a space or a colon, which LD_PRELOAD cannot carry, the library is
    preloaded by name and its folder put first on LD_LIBRARY_PATH."""
    env = os.environ if env is None else env
    path = str(library_path())
    old = env.get("LD_PRELOAD", "")
    if _preload_safe(path):
        return {"LD_PRELOAD": path + (" " + old if old else "")}
    lpath = env.get("LD_LIBRARY_PATH", "")
    return {"LD_PRELOAD": LIBRARY_NAME + (" " + old if old else ""),
            "LD_LIBRARY_PATH": str(libdir()) + (":" + lpath if lpath else "")}


def preload() -> str:
    """The assignment(s) for a shell: ``LD_PRELOAD=.../libmgpu_cached.so`` (quoted; see
    :func:`preload_env` for paths with spaces)."""
    path = str(library_path())
    if _preload_safe(path):
        return f"LD_PRELOAD={shlex.quote(path)}"
    return (f"LD_PRELOAD={LIBRARY_NAME} "
            f"LD_LIBRARY_PATH={shlex.quote(str(libdir()))}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}")
