# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""examples/mlir: the committed object of saxpy.mlir (Debian MLIR 19, kernel as PTX) linked with the
CLI's flags and run against the fake driver; the example's build script and the JIT runner where
MLIR 19 is installed."""

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import mgpu_cached
from conftest import CC, ROOT

EXAMPLE = ROOT / "examples" / "mlir"
MLIR_BIN = Path(os.environ.get("MLIR_BIN", "/usr/lib/llvm-19/bin"))
# vector.print's two functions, for machines without MLIR's runner utilities: the fake driver
# launches nothing, so the program prints y as it made it (1.0 everywhere)
PRINT_STUB = ('#include <stdio.h>\nvoid printF32(float f) { printf("%g", f); }\n'
              'void printNewline(void) { putchar(10); }\n')


def run(exe_args, tmp_path, fake_driver_build, disable=False):
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake_driver_build),
               MGPU_CACHED_STATS_FILE=str(tmp_path / "stats.json"))
    env.pop("MGPU_CACHED_DISABLE", None)
    if disable:
        env["MGPU_CACHED_DISABLE"] = "1"
    p = subprocess.run(exe_args, env=env, capture_output=True, text=True, check=True)
    assert p.stderr == ""
    return p.stdout, json.loads((tmp_path / "stats.json").read_text())["stats"]


def test_committed_object_links_and_runs(tmp_path, fake_driver_build):
    if CC is None:
        pytest.skip("no C compiler")
    (tmp_path / "print.c").write_text(PRINT_STUB)
    exe = tmp_path / "saxpy"
    subprocess.run([CC, str(EXAMPLE / "saxpy_llvm19_ptx.o"), str(tmp_path / "print.c"),
                    *mgpu_cached.ldflags_list(), "-o", str(exe)], check=True)
    out, st = run([str(exe)], tmp_path, fake_driver_build)
    assert out == "1\n" * 16
    assert (st["module_loads"], st["driver_module_loads"], st["launches"]) == (1, 1, 1)
    assert (st["alloc_misses"], st["alloc_bytes_in_use"]) == (2, 0)
    stock_out, _ = run([str(exe)], tmp_path, fake_driver_build, disable=True)
    assert stock_out == out


@pytest.fixture
def mlir19():
    tools = [MLIR_BIN / "mlir-opt", MLIR_BIN / "mlir-translate", MLIR_BIN / "llc"]
    utils = list((MLIR_BIN.parent / "lib").glob("libmlir_c_runner_utils.so*"))
    if not all(t.exists() for t in tools) or not utils or CC is None:  # what build.sh runs
        pytest.skip(f"MLIR 19 is not installed in {MLIR_BIN} (apt-get install mlir-19-tools "
                    "llvm-19 libmlir-19)")
    return MLIR_BIN


def test_build_script_and_jit_runner(tmp_path, fake_driver_build, mlir19):
    env = dict(os.environ, MLIR_BIN=str(mlir19),
               MGPU_CACHED=f"{shlex.quote(sys.executable)} -m mgpu_cached")
    subprocess.run(["sh", str(EXAMPLE / "build.sh"), str(tmp_path / "build")], env=env,
                   check=True, capture_output=True)
    out, st = run([str(tmp_path / "build" / "saxpy")], tmp_path, fake_driver_build)
    assert out == "1\n" * 16 and st["launches"] == 1
    runner = shutil.which("mlir-cpu-runner", path=str(mlir19)) or shutil.which(
        "mlir-runner", path=str(mlir19))
    if runner is None:
        pytest.skip("no MLIR JIT runner")
    utils = sorted((mlir19.parent / "lib").glob("libmlir_c_runner_utils.so*"))[0]
    out, st = run([runner, "--entry-point-result=void", str(tmp_path / "build" / "saxpy.llvm.mlir"),
                   f"--shared-libs={mgpu_cached.stock_libdir() / 'libmlir_cuda_runtime.so'},"
                   f"{utils}"], tmp_path, fake_driver_build)
    assert out == "1\n" * 16 and st["launches"] == 1
