# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""C users of the installed package: examples/c/main.c built through the CLI's flags, pkg-config
and CMake against the package under test, and the same from an install path holding a space."""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import mgpu_cached
from conftest import CC, ROOT

EXAMPLE = ROOT / "examples" / "c"


def run_example(exe: Path, fake_driver_build: Path) -> str:
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake_driver_build))
    env.pop("MGPU_CACHED_DISABLE", None)
    p = subprocess.run([str(exe)], env=env, capture_output=True, text=True, check=True)
    assert p.stderr == ""
    return p.stdout


def check_output(out: str) -> None:
    lines = out.splitlines()
    assert lines[0] == f"mgpu-cached {mgpu_cached.__version__}, cached, backend cuda"
    assert lines[1] == "allocated yes, reused yes"  # the caching allocator answered the 2nd
    assert "  alloc_hits 1" in lines and "  alloc_misses 1" in lines


def need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f"{tool} is not installed")
    if CC is None:
        pytest.skip("no C compiler")
    return path


def sh(script: str, **env) -> str:
    """Run a shell script (the README's way of using the flags: eval)."""
    full = dict(os.environ, **env)
    return subprocess.run(["sh", "-c", script], env=full, capture_output=True, text=True,
                          check=True).stdout


def test_with_the_cli_flags(tmp_path, fake_driver_build):
    need("sh")
    cli = f"{shlex.quote(sys.executable)} -m mgpu_cached"
    sh(f'eval "{CC} {EXAMPLE}/main.c $({cli} --cflags) $({cli} --ldflags) -o {tmp_path}/ex"')
    check_output(run_example(tmp_path / "ex", fake_driver_build))


def test_with_pkg_config(tmp_path, fake_driver_build):
    pkg_config = need("pkg-config")
    env = dict(os.environ, PKG_CONFIG_PATH=str(mgpu_cached.pkgconfig_dir()))
    flags = subprocess.run([pkg_config, "--cflags", "--libs", "mgpu_cached"], env=env,
                           capture_output=True, text=True, check=True).stdout
    version = subprocess.run([pkg_config, "--modversion", "mgpu_cached"], env=env,
                             capture_output=True, text=True, check=True).stdout.strip()
    assert version == mgpu_cached.__version__
    subprocess.run([CC, str(EXAMPLE / "main.c"), *shlex.split(flags), "-o",
                    str(tmp_path / "ex")], check=True)
    check_output(run_example(tmp_path / "ex", fake_driver_build))


def cmake_build(src: Path, build: Path, cmake_dir: Path) -> subprocess.CompletedProcess:
    cmake = need("cmake")
    conf = subprocess.run([cmake, "-S", str(src), "-B", str(build),
                           f"-Dmgpu_cached_DIR={cmake_dir}"], capture_output=True, text=True)
    if conf.returncode == 0:
        subprocess.run([cmake, "--build", str(build)], check=True, capture_output=True)
    return conf


def test_with_cmake(tmp_path, fake_driver_build):
    conf = cmake_build(EXAMPLE, tmp_path / "build", mgpu_cached.cmake_dir())
    assert conf.returncode == 0, conf.stdout + conf.stderr
    check_output(run_example(tmp_path / "build" / "example", fake_driver_build))


def test_cmake_version_check(tmp_path):
    """find_package(mgpu_cached 9.0) refuses this version (mgpu_cachedConfigVersion.cmake)."""
    src = tmp_path / "src"
    src.mkdir()
    text = (EXAMPLE / "CMakeLists.txt").read_text().replace("mgpu_cached 0.1 REQUIRED",
                                                            "mgpu_cached 9.0 REQUIRED")
    (src / "CMakeLists.txt").write_text(text)
    shutil.copy(EXAMPLE / "main.c", src)
    conf = cmake_build(src, tmp_path / "build", mgpu_cached.cmake_dir())
    assert conf.returncode != 0
    assert f"version: {mgpu_cached.__version__}" in conf.stderr


def test_an_install_path_with_a_space(tmp_path, fake_driver_build):
    """The package copied under 'with space/': the CLI's quoted flags through eval, pkg-config
    (which escapes the space), CMake, LD_PRELOAD through --preload and `stats`."""
    need("sh")
    root = tmp_path / "with space"
    pkg = root / "mgpu_cached"
    shutil.copytree(Path(mgpu_cached.__file__).parent, pkg,
                    ignore=shutil.ignore_patterns(".obj", "__pycache__"))
    env = dict(os.environ, PYTHONPATH=str(root), MGPU_CACHED_CUDA_DRIVER=str(fake_driver_build))
    env.pop("MGPU_CACHED_DISABLE", None)
    cli = f"{shlex.quote(sys.executable)} -m mgpu_cached"
    out = tmp_path / "out"
    out.mkdir()
    assert sh(f"{cli} --libdir", **env).strip() == str(pkg / "lib")
    # eval keeps each quoted flag in one word
    sh(f'eval "{CC} {EXAMPLE}/main.c $({cli} --cflags) $({cli} --ldflags) -o {out}/ex1"', **env)
    check_output(run_example(out / "ex1", fake_driver_build))
    assert str(pkg / "lib") in subprocess.run(["readelf", "-d", str(out / "ex1")],
                                              capture_output=True, text=True).stdout
    # pkg-config
    if shutil.which("pkg-config"):
        sh(f'PKG_CONFIG_PATH="$({cli} --pkgconfig-dir)"; export PKG_CONFIG_PATH; '
           f'eval "{CC} {EXAMPLE}/main.c $(pkg-config --cflags --libs mgpu_cached) -o {out}/ex2"',
           **env)
        check_output(run_example(out / "ex2", fake_driver_build))
    # CMake
    if shutil.which("cmake"):
        assert cmake_build(EXAMPLE, out / "build", pkg / "lib" / "cmake" / "mgpu_cached"
                           ).returncode == 0
        check_output(run_example(out / "build" / "example", fake_driver_build))
    # preload into a program linked against a do-nothing stand-in of the stock library
    (out / "stub.c").write_text("void *mgpuStreamCreate(void) { return 0; }\n")
    subprocess.run([CC, "-shared", "-fPIC", "-o", str(out / "libmlir_cuda_runtime.so"),
                    str(out / "stub.c")], check=True)
    (out / "prog.c").write_text("#include <stdio.h>\nvoid *mgpuStreamCreate(void);\n"
                                "int main(void) { printf(mgpuStreamCreate() ? \"real\\n\" : "
                                "\"stub\\n\"); return 0; }\n")
    subprocess.run([CC, "-o", str(out / "prog"), str(out / "prog.c"), f"-L{out}",
                    "-lmlir_cuda_runtime", f"-Wl,-rpath,{out}"], check=True)
    assert sh(f"{out}/prog", **env) == "stub\n"
    assert sh(f'eval "env $({cli} --preload) {out}/prog"', **env) == "real\n"
    stats = sh(f"{cli} stats -- {out}/prog", **env)
    assert stats.startswith("real\nbackend  cuda\n")
    assert re.search(r"^stream_creates\s+1\s", stats, re.M)
