# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The conformance corpus (tests/corpus/) on the CPU: every program, compiled by MLIR 19 and 22,
links against -lmgpu_cached, loads its modules, makes the driver calls of its feature and exits
cleanly against the recording fake driver (which runs no kernel), in cached and in stock mode, with
the same output in both; copies and memsets (no kernel) give the expected values. The committed
objects are the ones compile.sh makes from the sources, where MLIR is installed. The GPU half is
tests/gpu/test_corpus_gpu.py."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import mgpu_cached
from conftest import CC, ROOT

sys.path.insert(0, str(ROOT / "tests" / "corpus"))
import corpus  # noqa: E402

CASES = [(n, v) for n in corpus.PROGRAMS for v in corpus.LLVMS]
IDS = [f"{n}-llvm{v}" for n, v in CASES]
# The feature's own entry point each object must call (nm -u).
ENTRY_POINTS = {
    "memcpy_memset": {"mgpuMemset32", "mgpuMemset16", "mgpuMemcpy"},
    "host_register": {"mgpuMemHostRegisterMemRef", "mgpuMemHostUnregisterMemRef"},
    "tma": {"mgpuTensorMapEncodeTiledMemref"},
    "cluster": {"mgpuLaunchClusterKernel"},
    "async_chain": {"mgpuEventRecord", "mgpuStreamWaitEvent", "mgpuMemAlloc", "mgpuMemFree"},
    "concurrent": {"mgpuEventRecord", "mgpuStreamWaitEvent"},
    "two_modules": {"mgpuModuleLoad", "mgpuModuleGetFunction"},
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every program linked once (fails on an undefined mgpu* symbol)."""
    if CC is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("corpus")
    ld = mgpu_cached.ldflags_list()
    return {(n, v): corpus.build(n, v, d, ld, CC) for n, v in CASES}


def fake_run(exe, fake, mode):
    # MGPU_CACHED_ALLOCATOR_ZERO=0: the allocator clears reused blocks with cuMemsetD32Async on a
    # stream of its own, at a time of its reclaimer thread's choosing; the counts checked here are
    # the program's own memsets.
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake),
               RUNNER_FAKE_COUNTS=",".join(corpus.COUNTED), MGPU_CACHED_ALLOCATOR_ZERO="0")
    env.pop("MGPU_CACHED_STATS", None)
    return corpus.run(exe, mode, env, timeout=60)


def test_corpus_covers_the_features():
    assert set(corpus.PROGRAMS) == set(corpus.LAUNCHES)
    for name in corpus.PROGRAMS:
        assert corpus.obj(name, 19).exists() and corpus.obj(name, 22).exists(), name
        assert corpus.expected(name), name


# Programs whose kernels have module-scope state (issue 19, item 1): device printf and assert
# keep their format strings and messages in `.global` arrays, which a program could write, so
# their modules are never cached (csrc/support/blob_state.h).
STATEFUL = {"assert_fail", "assert_pass", "printf"}


@pytest.mark.parametrize("name,llvm", CASES, ids=IDS)
def test_program_runs_on_the_fake_driver_in_both_modes(built, fake_driver_build, tmp_path,
                                                       name, llvm):
    fake = tmp_path / "libfakecuda.so"  # a fresh instance per run: counts start at zero
    runs = {}
    for mode in corpus.MODES:
        shutil.copyfile(fake_driver_build, fake)
        r = runs[mode] = fake_run(built[name, llvm], fake, mode)
        assert r.rc == 0 and r.done, (mode, r.stdout, r.stderr)
        assert r.stderr == "", (mode, r.stderr)  # no error reported, none at exit either
        c = r.counts
        launches = c["cuLaunchKernel"] + c["cuLaunchKernelEx"] + c["cuGraphLaunch"]
        assert launches == corpus.LAUNCHES[name], (mode, c)
        for call, n in corpus.CALLS.get(name, {}).items():
            assert c[call] == n, (mode, call, c)
        modules = corpus.MODULES.get(name, 1)
        assert c["cuLibraryLoadData"] == 0 and c["cuLibraryUnload"] == 0, c  # module API only
        if mode == "cached" and name in STATEFUL:  # never cached: loaded where stock loads
            loads = corpus.LAUNCHES[name] if llvm == 19 else modules
            assert c["cuModuleLoadData"] == loads, c
            assert c["cuModuleUnload"] == (loads if llvm == 19 else 0), c
        elif mode == "cached":  # each blob loaded once, also where LLVM 19 loads it per launch
            assert c["cuModuleLoadData"] == modules and c["cuModuleUnload"] == 0, c
        else:  # the stock calls: per launch in LLVM 19 code, per module in a constructor in 22
            loads = corpus.LAUNCHES[name] if llvm == 19 else modules
            assert c["cuModuleLoadData"] == loads, c
            assert c["cuModuleUnload"] == (loads if llvm == 19 else 0), c
        # the program printed its lines (the fake runs no kernel: values are not checked here)
        want = 0 if name in corpus.DEVICE_OUTPUT else len(corpus.expected(name))
        assert len(r.lines) == want, (mode, r.lines)
    assert runs["cached"].lines == runs["stock"].lines
    # lines made by copies and memsets only hold the expected values on the fake too
    host = [x for x in corpus.expected(name) if x.startswith("host ")]
    assert [x for x in runs["cached"].lines if x.startswith("host ")] == host


def test_memcpy_memset_has_host_only_lines():
    """The check above compares something: memcpy_memset's copies and memsets."""
    assert len([x for x in corpus.expected("memcpy_memset") if x.startswith("host ")]) == 3


@pytest.mark.skipif(shutil.which("nm") is None, reason="no nm")
@pytest.mark.parametrize("name,llvm", [c for c in CASES if c[0] in ENTRY_POINTS],
                         ids=[i for c, i in zip(CASES, IDS) if c[0] in ENTRY_POINTS])
def test_object_calls_the_feature_entry_points(name, llvm):
    out = subprocess.run(["nm", "-u", str(corpus.obj(name, llvm))], capture_output=True,
                         text=True, check=True).stdout
    undefined = {line.split()[-1] for line in out.splitlines()}
    assert ENTRY_POINTS[name] <= undefined


# The toolchain the committed objects were made with: other versions make other (valid) bytes.
TOOLS = {19: "19.1.7", 22: "22.1.8", "ptxas": "V13.0.88"}


def _toolchain_differs(llvm):
    """Why the committed objects cannot be reproduced here (None: they can)."""
    d = Path(os.environ.get(f"MLIR_BIN_{llvm}") or {
        19: "/usr/lib/llvm-19/bin", 22: str(ROOT / ".toolchains/llvm22/usr/lib/llvm-22/bin")}[llvm])
    cuda = Path(os.environ.get("CUDA_PATH_DIR", "/usr/local/cuda")) / "bin" / "ptxas"
    missing = [tool for tool in ("mlir-opt", "mlir-translate", "llc") if not (d / tool).exists()]
    if missing or not cuda.exists():  # compile.sh runs all three (Debian: mlir-19-tools, llvm-19)
        return f"MLIR {llvm} ({', '.join(missing) or 'its tools'} in {d}) or {cuda} not installed"
    env = dict(os.environ, LD_LIBRARY_PATH=str(d.parent / "lib"))
    have = subprocess.run([str(d / "mlir-opt"), "--version"], capture_output=True, text=True,
                          env=env).stdout
    ptxas = subprocess.run([str(cuda), "--version"], capture_output=True, text=True).stdout
    if TOOLS[llvm] not in have or TOOLS["ptxas"] not in ptxas:
        return f"objects made by MLIR {TOOLS[llvm]} and ptxas {TOOLS['ptxas']}, not these"
    return None


@pytest.mark.parametrize("llvm", corpus.LLVMS)
def test_committed_objects_are_compiled_from_the_sources(tmp_path, llvm):
    """compile.sh makes the same bytes as the committed objects: no source edited without
    recompiling (the lowering is deterministic for a given MLIR and ptxas)."""
    why = _toolchain_differs(llvm)
    if why:
        pytest.skip(why)
    p = subprocess.run(["sh", str(corpus.HERE / "compile.sh"), str(llvm)],
                       env=dict(os.environ, CORPUS_OBJ_DIR=str(tmp_path)),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    differ = [n for n in corpus.PROGRAMS
              if (tmp_path / f"{n}_llvm{llvm}.o").read_bytes() != corpus.obj(n, llvm).read_bytes()]
    assert differ == []
