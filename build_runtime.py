# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Build libmgpu_cached.so from csrc/ with a C compiler, and install what C users need beside it.

This file is both the project's PEP 517 build backend (it re-exports setuptools' hooks, see
``pyproject.toml``) and the step that compiles the runtime: ``build_py`` calls :func:`build` so the
library lands inside the ``mgpu_cached`` package (in the source tree for an editable install). It
needs only a C compiler: no CUDA toolkit, no libcuda, no GPU, and (run as a script) no setuptools:

    python build_runtime.py [--no-strip] [OUT_DIR]   # default src/mgpu_cached/lib (PYTHONPATH=src)

Outputs, in OUT_DIR (``lib/`` of the package) and its sibling ``include/``:
  libmgpu_cached.so                      the runtime (SONAME libmgpu_cached.so)
  stock-name/libmlir_cuda_runtime.so     the same code under the stock library's name and SONAME,
                                         for builds and ``mlir-runner --shared-libs=`` that name it
  stock-name/libmlir_rocm_runtime.so     the same again under the stock ROCm wrapper's name (the
                                         library serves AMD GPUs through its HIP backend)
  pkgconfig/mgpu_cached.pc               for pkg-config (relocatable: paths from ${pcfiledir})
  cmake/mgpu_cached/mgpu_cachedConfig.cmake (+ ConfigVersion): find_package(mgpu_cached) gives the
                                         imported target mgpu_cached::mgpu_cached
  ../include/mgpu_cached.h, mgpu_abi.h   the library's own C interface and the mgpu* ABI

The compiler: ``$CC`` (split like a shell word list), else Python's configured compiler if it is
installed, else ``cc``/``gcc``/``clang``; ``$CFLAGS`` and ``$LDFLAGS`` are appended. With
``MGPU_CACHED_MANYLINUX=1`` the library is compiled with ``zig cc`` (PyPI package ``ziglang``, added
to the build requirements automatically) against glibc 2.17, and the wheel is tagged
``manylinux_2_17`` (``manylinux2014``): it then runs on any distribution since 2014, which
``auditwheel show`` confirms. ``MGPU_CACHED_MANYLINUX=2_28`` (say) picks another glibc.

The library is linked stripped (``-s``: no symbol table, no debug information; the exported
functions are in the dynamic symbol table, which stays). For a library to debug, build it
in place with ``CFLAGS=-g python build_runtime.py --no-strip``.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import shutil
import subprocess
import sys
import sysconfig
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import List, Optional, Sequence

ROOT = Path(__file__).resolve().parent
CSRC = ROOT / "csrc"
HEADERS = ("mgpu_cached.h", "mgpu_abi.h")
LIB_NAME = "libmgpu_cached.so"
STOCK_DIR = "stock-name"
STOCK_NAME = "libmlir_cuda_runtime.so"
STOCK_ROCM_NAME = "libmlir_rocm_runtime.so"
CFLAGS = ["-std=c11", "-D_GNU_SOURCE", "-O2", "-fPIC", "-fvisibility=hidden", "-pthread",
          "-Wall", "-Wextra"]
# -z nodelete: the library starts threads (the allocator's reclaimers) that may be inside its code
# when a host unloads it (mlir-cpu-runner dlcloses its --shared-libs at exit): it is never unmapped.
LDFLAGS = ["-shared", "-pthread", "-Wl,--no-undefined", "-Wl,-z,now", "-Wl,-z,nodelete"]
LIBS = ["-ldl"]
MANYLINUX_ENV = "MGPU_CACHED_MANYLINUX"
STRIP_LDFLAGS = ["-s"]  # at link: gcc, clang and zig cc alike (zig has no objcopy/strip)


def library_sources(csrc: Path = CSRC) -> List[Path]:
    """The library's C files: those of csrc/'s layer folders. csrc/'s top level holds only the flat
    view (all.c and the pool.c link, for builds that compile csrc/*.c), the same code again."""
    return sorted(csrc.glob("*/*.c"))


def version() -> str:
    """The project version (pyproject.toml is the one place it is written)."""
    for line in (ROOT / "pyproject.toml").read_text().splitlines():
        if line.strip().startswith("version"):
            return line.split("=", 1)[1].strip().strip('"')
    return "0"


# ---- the compiler ------------------------------------------------------------------------------

def manylinux_glibc() -> Optional[str]:
    """"2_17" when MGPU_CACHED_MANYLINUX asks for a manylinux build (1 means 2_17), else None."""
    v = os.environ.get(MANYLINUX_ENV, "").strip()
    if v in ("", "0"):
        return None
    return "2_17" if v == "1" else v.replace(".", "_")


def _zig_target() -> str:
    glibc = manylinux_glibc() or "2_17"
    return f"{platform.machine()}-linux-gnu.{glibc.replace('_', '.')}"


def compiler() -> List[str]:
    """The C compiler command line (see the module docstring)."""
    if manylinux_glibc():
        return [sys.executable, "-m", "ziglang", "cc", "-target", _zig_target()]
    for candidate in (os.environ.get("CC"), sysconfig.get_config_var("CC")):
        words = shlex.split(candidate or "")
        if words and shutil.which(words[0]):
            return words
    for name in ("cc", "gcc", "clang"):
        if shutil.which(name):
            return [name]
    raise RuntimeError("mgpu-cached needs a C compiler to build libmgpu_cached.so: install one "
                       "(e.g. 'apt-get install gcc') or set CC")


def _run(cmd: Sequence[str]) -> None:
    p = subprocess.run(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"command failed ({p.returncode}): {shlex.join(cmd)}\n{p.stdout}")
    if p.stdout.strip():
        print(p.stdout, end="", file=sys.stderr)


# ---- files for C users -------------------------------------------------------------------------

def _pkgconfig(ver: str) -> str:
    return f"""# pkg-config file of mgpu-cached {ver} (written by build_runtime.py; relocatable)
prefix=${{pcfiledir}}/../..
libdir=${{prefix}}/lib
includedir=${{prefix}}/include
stocklibdir=${{libdir}}/{STOCK_DIR}

Name: mgpu_cached
Description: Drop-in libmlir_cuda_runtime / libmlir_rocm_runtime replacement for MLIR GPU code
Version: {ver}
Cflags: -I${{includedir}}
Libs: -L${{libdir}} -Wl,-rpath,${{libdir}} -lmgpu_cached
"""


def _cmake_config(ver: str) -> str:
    return f"""# mgpu_cachedConfig.cmake - find_package(mgpu_cached) for mgpu-cached {ver}
# (written by build_runtime.py; relocatable). Defines the imported target mgpu_cached::mgpu_cached
# (library, headers, and a build-tree RPATH to the library's folder) and the variables
# mgpu_cached_LIBRARY, mgpu_cached_INCLUDE_DIRS, mgpu_cached_LIBRARY_DIR and
# mgpu_cached_STOCK_LIBRARY_DIR (the copies named libmlir_cuda_runtime.so / libmlir_rocm_runtime.so).
get_filename_component(_mgpu_cached_prefix "${{CMAKE_CURRENT_LIST_DIR}}/../../.." ABSOLUTE)
set(mgpu_cached_VERSION "{ver}")
set(mgpu_cached_LIBRARY_DIR "${{_mgpu_cached_prefix}}/lib")
set(mgpu_cached_LIBRARY "${{mgpu_cached_LIBRARY_DIR}}/{LIB_NAME}")
set(mgpu_cached_INCLUDE_DIRS "${{_mgpu_cached_prefix}}/include")
set(mgpu_cached_STOCK_LIBRARY_DIR "${{mgpu_cached_LIBRARY_DIR}}/{STOCK_DIR}")
if(NOT EXISTS "${{mgpu_cached_LIBRARY}}")
  set(mgpu_cached_FOUND FALSE)
  set(mgpu_cached_NOT_FOUND_MESSAGE "${{mgpu_cached_LIBRARY}} is missing")
  return()
endif()
if(NOT TARGET mgpu_cached::mgpu_cached)
  add_library(mgpu_cached::mgpu_cached SHARED IMPORTED)
  set_target_properties(mgpu_cached::mgpu_cached PROPERTIES
    IMPORTED_LOCATION "${{mgpu_cached_LIBRARY}}"
    IMPORTED_SONAME "{LIB_NAME}"
    INTERFACE_INCLUDE_DIRECTORIES "${{mgpu_cached_INCLUDE_DIRS}}")
endif()
unset(_mgpu_cached_prefix)
"""


def _cmake_version(ver: str) -> str:
    return f"""# mgpu_cachedConfigVersion.cmake - mgpu-cached {ver}: compatible with requests for the same
# major version (the same minor version while the major version is 0) that are not newer.
set(PACKAGE_VERSION "{ver}")
set(PACKAGE_VERSION_COMPATIBLE FALSE)
if(NOT PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  string(REGEX MATCH "^[0-9]+\\\\.[0-9]+" _have "${{PACKAGE_VERSION}}")
  string(REGEX MATCH "^[0-9]+\\\\.[0-9]+" _want "${{PACKAGE_FIND_VERSION}}.0")
  if(PACKAGE_FIND_VERSION_MAJOR STREQUAL "0" OR "{ver}" MATCHES "^0\\\\.")
    if(_have STREQUAL _want OR PACKAGE_FIND_VERSION STREQUAL "")
      set(PACKAGE_VERSION_COMPATIBLE TRUE)
    endif()
  elseif(PACKAGE_FIND_VERSION_MAJOR STREQUAL "{ver.split('.')[0]}")
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
  endif()
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
"""


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# ---- the build ---------------------------------------------------------------------------------

# what build() writes, relative to OUT_DIR: the library under each name (path, SONAME), and the
# files for C users (path, text of the version); plus HEADERS in the include folder
LIBRARIES = ((LIB_NAME, LIB_NAME), (f"{STOCK_DIR}/{STOCK_NAME}", STOCK_NAME),
             (f"{STOCK_DIR}/{STOCK_ROCM_NAME}", STOCK_ROCM_NAME))
C_USER_FILES = (("pkgconfig/mgpu_cached.pc", _pkgconfig),
                ("cmake/mgpu_cached/mgpu_cachedConfig.cmake", _cmake_config),
                ("cmake/mgpu_cached/mgpu_cachedConfigVersion.cmake", _cmake_version))


def build(out_dir: os.PathLike | str, extra_cflags: Sequence[str] = (),
          build_temp: os.PathLike | str | None = None,
          include_dir: os.PathLike | str | None = None,
          strip: bool = True) -> List[Path]:
    """Compile csrc/*.c, link the runtime into ``out_dir`` and write the files for C users there
    and in ``include_dir`` (default: ``out_dir``'s sibling ``include``); returns the paths
    written. ``strip`` links it without symbol table and debug information."""
    out = Path(out_dir)
    inc = Path(include_dir) if include_dir else out.parent / "include"
    (out / STOCK_DIR).mkdir(parents=True, exist_ok=True)
    temp = Path(build_temp) if build_temp else out / ".obj"
    temp.mkdir(parents=True, exist_ok=True)
    cc = compiler()
    ver = version()
    cflags = CFLAGS + [f'-DMGPU_CACHED_VERSION="{ver}"', f"-I{CSRC}"] + list(extra_cflags) + \
        shlex.split(os.environ.get("CFLAGS", ""))
    sources = library_sources()
    objects = [temp / (s.stem + ".o") for s in sources]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        list(pool.map(lambda so: _run(cc + cflags + ["-c", str(so[0]), "-o", str(so[1])]),
                      zip(sources, objects)))
    ldflags = LDFLAGS + (STRIP_LDFLAGS if strip else []) + \
        shlex.split(os.environ.get("LDFLAGS", ""))
    written = []
    for rel, soname in LIBRARIES:
        target = out / rel
        _run(cc + ldflags + [f"-Wl,-soname,{soname}", "-o", str(target)] +
             [str(o) for o in objects] + LIBS)
        written.append(target)
    for name in HEADERS:
        inc.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(CSRC / "include" / name, inc / name)
        written.append(inc / name)
    for rel, text in C_USER_FILES:
        written.append(_write(out / rel, text(ver)))
    return written


def package_outputs(package_dir: Path) -> List[Path]:
    """Every file :func:`build` writes for the package at ``package_dir``."""
    lib = package_dir / "lib"
    return ([lib / rel for rel, _ in LIBRARIES] + [package_dir / "include" / h for h in HEADERS] +
            [lib / rel for rel, _ in C_USER_FILES])


# ---- the PEP 517 backend: setuptools, plus the compile step ----------------------------------

try:
    from setuptools import build_meta as _meta
    from setuptools.build_meta import *  # noqa: F401,F403  (PEP 517 hooks)
    from setuptools.command.build_py import build_py as _build_py
except ImportError:  # run as a script in a venv without setuptools: build() still works
    _meta = None
    _build_py = object  # type: ignore

if _meta is not None:
    def get_requires_for_build_wheel(config_settings=None):  # noqa: F811
        extra = ["ziglang"] if manylinux_glibc() else []
        return _meta.get_requires_for_build_wheel(config_settings) + extra

    class BuildPy(_build_py):  # type: ignore[misc,valid-type]
        """build_py that also compiles the runtime into the package (in the source tree for an
        editable install, so that the installed package finds it there)."""

        def _package_dir(self) -> Path:
            if getattr(self, "editable_mode", False):
                return ROOT / "src" / "mgpu_cached"
            return Path(self.build_lib) / "mgpu_cached"

        def run(self) -> None:
            super().run()
            if not self.dry_run:
                pkg = self._package_dir()
                build(pkg / "lib", include_dir=pkg / "include",
                      build_temp=Path(self.build_lib).parent / "mgpu_cached_obj")

        def get_outputs(self, include_bytecode: bool = True) -> List[str]:
            outputs = super().get_outputs(include_bytecode)
            if getattr(self, "editable_mode", False):
                return outputs
            return outputs + [str(p) for p in package_outputs(Path(self.build_lib) / "mgpu_cached")]

    try:  # the wheel holds a native library: platlib, tagged for this platform, not "any"
        from setuptools.command.bdist_wheel import bdist_wheel as _bdist_wheel
    except ImportError:  # setuptools < 70.1 (run as a script in an old venv: no wheel needed)
        try:
            from wheel.bdist_wheel import bdist_wheel as _bdist_wheel  # type: ignore
        except ImportError:
            _bdist_wheel = object  # type: ignore

    class BdistWheel(_bdist_wheel):  # type: ignore[misc,valid-type]
        def finalize_options(self) -> None:
            # A native library: install it to platlib (install picks platlib only for
            # distributions with extension modules), and mark the wheel not pure.
            self.distribution.has_ext_modules = lambda: True
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self):
            _, _, plat = super().get_tag()
            glibc = manylinux_glibc()
            if glibc:
                arch = platform.machine()
                plat = f"manylinux_{glibc}_{arch}"
                if glibc == "2_17":
                    plat += f".manylinux2014_{arch}"
            return "py3", "none", plat


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python build_runtime.py [--no-strip] [OUT_DIR]``: build, print the paths written."""
    parser = argparse.ArgumentParser(
        prog="python build_runtime.py",
        description="Compile csrc/ into libmgpu_cached.so (and its stock-named copies), and write "
        "the headers, pkg-config and CMake files beside it. Needs only a C compiler ($CC, else "
        "cc/gcc/clang; $CFLAGS and $LDFLAGS are appended).")
    parser.add_argument("out_dir", nargs="?", metavar="OUT_DIR",
                        default=str(ROOT / "src" / "mgpu_cached" / "lib"),
                        help="folder of the library (default: src/mgpu_cached/lib, what "
                        "PYTHONPATH=src and an editable install use); the headers go to its "
                        "sibling include/")
    parser.add_argument("--no-strip", action="store_true",
                        help="keep the symbol table and debug information (with CFLAGS=-g: a library "
                        "to debug)")
    args = parser.parse_args(argv)
    try:
        written = build(args.out_dir, strip=not args.no_strip)
    except RuntimeError as e:
        print(f"build_runtime.py: {e}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
