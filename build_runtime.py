"""Build libmgpu_cached.so from csrc/ with the C compiler setuptools finds.

This file is both the project's PEP 517 build backend (it re-exports setuptools' hooks, see
``pyproject.toml``) and the step that compiles the runtime: ``build_py`` calls :func:`build` so the
library lands inside the ``mgpu_cached`` package. It needs only a C compiler: no CUDA toolkit, no
libcuda, no GPU. Run ``python build_runtime.py [OUT_DIR]`` to build in place (default
``src/mgpu_cached/lib``).

Outputs, in OUT_DIR:
  libmgpu_cached.so                      the runtime (SONAME libmgpu_cached.so)
  stock-name/libmlir_cuda_runtime.so     the same code under the stock library's name and SONAME,
                                         for builds and ``mlir-runner --shared-libs=`` that name it
  stock-name/libmlir_rocm_runtime.so     the same again under the stock ROCm wrapper's name (the
                                         library serves AMD GPUs through its HIP backend)
"""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path
from typing import List, Sequence

from setuptools.build_meta import *  # noqa: F401,F403  (PEP 517 hooks)
from setuptools.command.build_py import build_py as _build_py

ROOT = Path(__file__).resolve().parent
CSRC = ROOT / "csrc"
LIB_NAME = "libmgpu_cached.so"
STOCK_DIR = "stock-name"
STOCK_NAME = "libmlir_cuda_runtime.so"
STOCK_ROCM_NAME = "libmlir_rocm_runtime.so"
CFLAGS = ["-std=c11", "-D_GNU_SOURCE", "-O2", "-fPIC", "-fvisibility=hidden", "-pthread",
          "-Wall", "-Wextra"]
LDFLAGS = ["-shared", "-pthread", "-Wl,--no-undefined", "-Wl,-z,now"]
LIBS = ["dl"]


def _compiler():
    try:
        from setuptools._distutils.ccompiler import new_compiler
        from setuptools._distutils.sysconfig import customize_compiler
    except ImportError:  # pragma: no cover - very old setuptools
        from distutils.ccompiler import new_compiler  # type: ignore
        from distutils.sysconfig import customize_compiler  # type: ignore
    cc = new_compiler()
    customize_compiler(cc)
    return cc


def build(out_dir: os.PathLike | str, extra_cflags: Sequence[str] = (),
          build_temp: os.PathLike | str | None = None) -> List[Path]:
    """Compile csrc/*.c and link the runtime into ``out_dir``; returns the paths written."""
    out = Path(out_dir)
    (out / STOCK_DIR).mkdir(parents=True, exist_ok=True)
    temp = Path(build_temp) if build_temp else out / ".obj"
    temp.mkdir(parents=True, exist_ok=True)
    cc = _compiler()
    sources = sorted(str(p.relative_to(ROOT)) for p in CSRC.glob("*.c"))
    version = _version()
    objects = cc.compile(sources, output_dir=str(temp), include_dirs=[str(CSRC)],
                         macros=[("MGPU_CACHED_VERSION", f'"{version}"')],
                         extra_postargs=CFLAGS + list(extra_cflags))
    written = []
    for target, soname in ((out / LIB_NAME, LIB_NAME), (out / STOCK_DIR / STOCK_NAME, STOCK_NAME),
                           (out / STOCK_DIR / STOCK_ROCM_NAME, STOCK_ROCM_NAME)):
        cc.link_shared_object(objects, str(target), libraries=LIBS,
                              extra_postargs=LDFLAGS + [f"-Wl,-soname,{soname}"])
        written.append(target)
    return written


def _version() -> str:
    for line in (ROOT / "pyproject.toml").read_text().splitlines():
        if line.strip().startswith("version"):
            return line.split("=", 1)[1].strip().strip('"')
    return "0"


class BuildPy(_build_py):
    """build_py that also compiles the runtime into the package's lib/ folder."""

    def run(self) -> None:
        super().run()
        if not self.dry_run:
            target = Path(self.build_lib) / "mgpu_cached" / "lib"
            build(target, build_temp=Path(self.build_lib).parent / "mgpu_cached_obj")

    def get_outputs(self, include_bytecode: bool = True) -> List[str]:
        outputs = super().get_outputs(include_bytecode)
        lib = Path(self.build_lib) / "mgpu_cached" / "lib"
        return outputs + [str(lib / LIB_NAME), str(lib / STOCK_DIR / STOCK_NAME),
                          str(lib / STOCK_DIR / STOCK_ROCM_NAME)]


try:  # the wheel holds a native library: tag it for this platform, not "any"
    from setuptools.command.bdist_wheel import bdist_wheel as _bdist_wheel
except ImportError:  # setuptools < 70.1
    from wheel.bdist_wheel import bdist_wheel as _bdist_wheel  # type: ignore


class BdistWheel(_bdist_wheel):
    def finalize_options(self) -> None:
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        _, _, plat = super().get_tag()
        return "py3", "none", plat


if __name__ == "__main__":
    dest = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "src" / "mgpu_cached" / "lib")
    for path in build(dest):
        print(path)
