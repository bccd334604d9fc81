# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The JIT path: an MLIR GPU program run by Debian's mlir-cpu-runner-19 (or trixie's
mlir-runner-22) with --shared-libs naming the installed library under the stock name, against the
recording fake driver (README "JIT: mlir-cpu-runner / mlir-runner"). The program
(tests/data/jit/scale.mlir, lowered by tests/data/jit/compile.sh) fills a device buffer with 21,
launches a kernel that doubles it (the fake runs no kernel), copies it back and prints it."""

import glob
import json
import os
import shutil
import subprocess

import pytest

import mgpu_cached
from conftest import DATA

RUNNERS = {19: "mlir-cpu-runner-19", 22: "mlir-runner-22"}


def runner(v):
    exe = shutil.which(RUNNERS[v]) or shutil.which(RUNNERS[v].rsplit("-", 1)[0],
                                                   path=f"/usr/lib/llvm-{v}/bin")
    if not exe:
        pytest.skip(f"{RUNNERS[v]} is not installed (Debian/Ubuntu: apt-get install mlir-{v}-tools)")
    utils = []
    for name in ("libmlir_runner_utils.so", "libmlir_c_runner_utils.so"):
        found = sorted(glob.glob(f"/usr/lib/llvm-{v}/lib/{name}*"))
        if not found:
            pytest.skip(f"{name} of LLVM {v} is not installed (package libmlir-{v})")
        utils.append(found[0])
    program = DATA / "jit" / f"scale_llvm{v}.llvm.mlir"
    if not program.is_file():
        pytest.skip(f"{program.name} not generated (tests/data/jit/compile.sh {v})")
    return exe, utils, program


@pytest.mark.parametrize("v", [19, 22])
@pytest.mark.parametrize("disable", [False, True])
def test_runner_with_shared_libs(tmp_path, fake_driver_build, v, disable):
    exe, utils, program = runner(v)
    lib = mgpu_cached.stock_libdir() / "libmlir_cuda_runtime.so"
    stats = tmp_path / "stats.json"
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake_driver_build),
               MGPU_CACHED_STATS_FILE=str(stats))
    env.pop("MGPU_CACHED_DISABLE", None)
    if disable:
        env["MGPU_CACHED_DISABLE"] = "1"
    p = subprocess.run([exe, "-e", "main", "--entry-point-result=void",
                        "--shared-libs=" + ",".join([str(lib)] + utils), str(program)],
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "[21,  21,  21,  21,  21,  21,  21,  21]" in p.stdout, p.stdout
    assert "failed with" not in p.stderr, p.stderr
    report = json.loads(stats.read_text())
    assert report["enabled"] is (not disable)
    s = report["stats"]
    if disable:
        assert s["launches"] == 0 and s["module_loads"] == 0  # stock calls: no cache involved
    else:
        assert s["module_loads"] == 1 and s["launches"] == 1 and s["errors"] == 0
        assert s["alloc_bytes_in_use"] == 0
