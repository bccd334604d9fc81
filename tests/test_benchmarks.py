# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The benchmark suite and `mgpu-cached bench` without a GPU: runner arguments, blob extraction,
consistency checks, table formatting, the harness against the recording fake driver, the PTX the
package ships, and the plain no-GPU message. No timing is asserted anywhere."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import mgpu_cached
from conftest import CC, ROOT
from mgpu_cached import bench

OBJECTS = ROOT / "tests" / "data" / "mlir"


def _load_runner():
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "benchmarks" / "run.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_run"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


run = _load_runner()


# ---- runner -----------------------------------------------------------------------------------

def test_parse_config():
    c = run.parse_config("cached-noalloc:MGPU_CACHED_ALLOCATOR=0,OTHER=a=b")
    assert c.name == "cached-noalloc"
    assert c.env == (("MGPU_CACHED_ALLOCATOR", "0"), ("OTHER", "a=b"))
    for bad in ("noname", ":A=1", "x:", "x:A", "x:=1", "cached:A=1", "x:A-B=1"):
        with pytest.raises(ValueError):
            run.parse_config(bad)


def test_parse_args_defaults_and_errors(capsys):
    a = run.parse_args(["--out", "d", "--config", "x:A=1", "--config", "y:B=2",
                        "--programs", "stencil,empty", "--llvm", "22"])
    assert a.programs == ["stencil", "empty"] and a.llvm == [22]
    assert [c.name for c in a.config] == ["x", "y"]
    d = run.parse_args(["--out", "d"])
    assert d.programs == list(run.PROGRAMS) and d.llvm == [19, 22] and d.config == []
    with pytest.raises(SystemExit):
        run.parse_args(["--out", "d", "--config", "x:A=1", "--config", "x:B=2"])
    with pytest.raises(SystemExit):
        run.parse_args(["--out", "d", "--config", "stock:A=1"])
    with pytest.raises(SystemExit):
        run.parse_args(["--out", "d", "--programs", "nope"])
    with pytest.raises(SystemExit):
        run.parse_args(["--out", "d", "--llvm", "18"])
    assert d.skip == []
    assert run.parse_args(["--out", "d", "--skip", "stock,preload"]).skip == ["stock", "preload"]
    for bad in ("cached", "floor", "nope"):  # the ratios need floor and cached
        with pytest.raises(SystemExit):
            run.parse_args(["--out", "d", "--skip", bad])


def test_runtime_env(monkeypatch):
    monkeypatch.setenv("MGPU_CACHED_DISABLE", "1")
    monkeypatch.setenv("MGPU_CACHED_ALLOCATOR", "1")
    monkeypatch.setenv("MGPU_CACHED_CUDA_DRIVER", "/x/libcuda.so.1")
    monkeypatch.setenv("LD_PRELOAD", "/x/other.so")
    configs = {"noalloc": run.parse_config("noalloc:MGPU_CACHED_ALLOCATOR=0")}
    cached = run.runtime_env("cached", configs, None)
    assert "MGPU_CACHED_DISABLE" not in cached and "LD_PRELOAD" not in cached
    assert "MGPU_CACHED_ALLOCATOR" not in cached
    assert cached["MGPU_CACHED_CUDA_DRIVER"] == "/x/libcuda.so.1"
    assert run.runtime_env("stock", configs, None)["MGPU_CACHED_DISABLE"] == "1"
    assert run.runtime_env("stock-named", configs, None)["MGPU_CACHED_DISABLE"] == "1"
    pre = run.runtime_env("preload", configs, Path("/s.json"))
    assert pre["LD_PRELOAD"] == str(mgpu_cached.library_path())
    assert "MGPU_CACHED_DISABLE" not in pre and pre["MGPU_CACHED_STATS_FILE"] == "/s.json"
    noalloc = run.runtime_env("noalloc", configs, None)
    assert noalloc["MGPU_CACHED_ALLOCATOR"] == "0" and "MGPU_CACHED_DISABLE" not in noalloc
    assert "MGPU_CACHED_STATS_FILE" not in run.runtime_env("floor", configs, Path("/s.json"))


def test_command_for_picks_the_binary():
    exes = {"floor": Path("/b/floor"), "blob:stencil:19": Path("/b/s.fatbin"),
            "cached:stencil:19": Path("/b/c"), "stock-named:stencil:19": Path("/b/n")}
    assert run.command_for("floor", "stencil", 19, exes, 10, 3, 2) == [
        "/b/floor", "stencil", "/b/s.fatbin", "10", "3", "2"]
    assert run.command_for("cached", "stencil", 19, exes, 10, 3, 2)[0] == "/b/c"
    assert run.command_for("stock", "stencil", 19, exes, 10, 3, 2)[0] == "/b/c"
    assert run.command_for("preload", "stencil", 19, exes, 10, 3, 2)[0] == "/b/n"
    assert run.command_for("stock-named", "stencil", 19, exes, 10, 3, 2)[0] == "/b/n"
    assert run.command_for("myconfig", "stencil", 19, exes, 10, 3, 2)[0] == "/b/c"


@pytest.mark.parametrize("stem,kernels", [("empty_loop", [b"empty"]),
                                          ("stencil", [b"laplace"]),
                                          ("async_step", [b"produce_a", b"produce_b",
                                                          b"combine"])])
@pytest.mark.parametrize("llvm", [19, 22])
def test_extract_blob_from_the_committed_objects(stem, kernels, llvm):
    blob = run.extract_blob((OBJECTS / f"{stem}_llvm{llvm}.o").read_bytes())
    assert int.from_bytes(blob[:4], "little") == 0xBA55ED50  # fatbin magic
    header, = __import__("struct").unpack_from("<Q", blob, 8)
    assert 16 + header == len(blob)  # the fatbin's own size: the whole symbol, no more
    for k in kernels:
        assert k in blob
    with pytest.raises(ValueError):
        run.extract_blob(b"not an object")


def _cells(**medians):
    cells = {}
    for key, (value, h) in medians.items():
        prog, v, rt = key.split("__")
        cells[(prog, int(v), rt.replace("_", "-"))] = run.Cell([value, value], [h], ["ok"])
    return cells


def test_table_and_ratios():
    cells = _cells(empty__19__floor=(10.0, "a"), empty__19__cached=(10.5, "a"),
                   empty__19__stock=(42.0, "a"), empty__19__stock_named=(41.0, "a"),
                   empty__19__preload=(10.5, "a"), empty__19__noalloc=(21.0, "a"))
    md = run.table(cells, ["empty"], [19], ["noalloc"])
    head, sep, row = md.splitlines()
    assert head.split(" | ")[2:8] == ["floor", "cached", "stock", "stock-named", "preload",
                                      "noalloc"]
    cols = [c.strip() for c in row.strip("|").split("|")]
    assert cols[:8] == ["empty", "19", "10.00", "10.50", "42.00", "41.00", "10.50", "21.00"]
    assert cols[8:] == ["1.05×", "4.00×", "1.00×", "2.00×", "2.10×"]  # last: noalloc/floor
    assert sep.count("---") == len(cols)
    assert run.consistency(cells) == []


def test_consistency_finds_failed_checks_and_differing_results():
    cells = _cells(stencil__22__floor=(1.0, "a"), stencil__22__cached=(1.0, "a"),
                   stencil__22__stock=(1.0, "b"))
    cells[("stencil", 22, "cached")].checks.append("FAIL max abs error 0.5")
    problems = run.consistency(cells)
    assert any("stencil LLVM 22 cached: check FAIL" in p for p in problems)
    assert any("results differ" in p and "stock=['b']" in p for p in problems)


@pytest.fixture(scope="module")
def harness_build(tmp_path_factory):
    if CC is None:
        pytest.skip("no C compiler")
    out = tmp_path_factory.mktemp("harness")
    exes = {}
    for prog, macro, stem in (("empty", "PROG_EMPTY", "empty_loop"),
                              ("stencil", "PROG_STENCIL", "stencil")):
        exe = out / prog
        subprocess.run([CC, "-std=c11", "-D_GNU_SOURCE", "-O1", f"-I{ROOT / 'benchmarks/harness'}",
                        f"-D{macro}", "-o", str(exe), str(ROOT / "benchmarks/harness/harness.c"),
                        str(OBJECTS / f"{stem}_llvm22.o"), *mgpu_cached.ldflags_list(), "-lm"],
                       check=True)
        exes[prog] = exe
    return exes


def test_harness_runs_every_launch(harness_build, fake_driver_build, tmp_path):
    """The harness drives the MLIR program: warm-up + reps x n launches, one JSON line."""
    stats = tmp_path / "stats.json"
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake_driver_build),
               MGPU_CACHED_STATS_FILE=str(stats))
    env.pop("MGPU_CACHED_DISABLE", None)
    out = subprocess.run([str(harness_build["empty"]), "10", "3", "4"], env=env,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert res["program"] == "empty" and res["n"] == 10 and len(res["us"]) == 3
    assert res["check"] == "none"
    assert json.loads(stats.read_text())["stats"]["launches"] == 4 + 3 * 10


def test_harness_check_catches_wrong_results(harness_build, fake_driver_build):
    """The fake driver computes nothing: the stencil's CPU check must fail, with exit 1."""
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake_driver_build))
    env.pop("MGPU_CACHED_DISABLE", None)
    out = subprocess.run([str(harness_build["stencil"]), "4", "1", "0"], env=env,
                         capture_output=True, text=True)
    assert out.returncode == 1
    assert json.loads(out.stdout)["check"].startswith("FAIL max abs error")


# ---- mgpu-cached bench --------------------------------------------------------------------------

def test_package_ships_the_bench_kernel():
    installed = Path(mgpu_cached.__file__).resolve().parent / "data" / "empty.ptx"
    assert bench.PTX_PATH == installed and installed.is_file()
    text = installed.read_text()
    assert ".visible .entry empty()" in text and ".version" in text and ".target" in text


def test_bench_without_a_gpu_says_so(tmp_path):
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(tmp_path / "missing" / "libcuda.so.1"))
    env.pop("MGPU_CACHED_DISABLE", None)
    out = subprocess.run([sys.executable, "-m", "mgpu_cached", "bench"], env=env,
                         capture_output=True, text=True)
    assert out.returncode == bench.NO_GPU_EXIT == 2
    assert out.stdout == ""
    assert "needs an NVIDIA GPU" in out.stderr and "nothing was measured" in out.stderr
    assert "Traceback" not in out.stderr


def test_bench_on_the_hip_backend_says_it_times_cuda_only(tmp_path, fake_hip_build):
    env = dict(os.environ, MGPU_CACHED_BACKEND="hip", MGPU_CACHED_HIP_RUNTIME=str(fake_hip_build))
    env.pop("MGPU_CACHED_DISABLE", None)
    out = subprocess.run([sys.executable, "-m", "mgpu_cached", "bench"], env=env,
                         capture_output=True, text=True)
    assert out.returncode == bench.NO_GPU_EXIT
    assert out.stdout == ""
    assert "chose its hip backend" in out.stderr and "Traceback" not in out.stderr


def test_bench_plan_covers_every_mode_of_both_sequences():
    rows = bench.plan()
    for key, _ in bench.SEQUENCES:
        for mode in ("cached", "nograph", "stock"):
            assert (key, mode) in [(s, m) for s, m, _ in rows]
    assert ("graphfloor", "cached") in [(s, m) for s, m, _ in rows]
    assert len({label for _, _, label in rows}) == len(rows)


def test_bench_table():
    results = {label: bench.Result(label, [float(i + 1)] * 3)
               for i, (_, _, label) in enumerate(bench.plan())}
    text = bench.format_table(results, "Some GPU", 100, 2)
    assert "device: Some GPU; 100 iterations x 2 rounds" in text
    # plan order: floor 1, graph floor 2, LLVM <= 20 cached/nograph/stock 3/4/5, LLVM >= 21 6/7/8
    line20 = next(ln for ln in text.splitlines() if ln.startswith("LLVM <= 20"))
    assert line20.split()[-4:] == ["3.00", "4.00", "5.00", "1.67x"]
    line21 = next(ln for ln in text.splitlines() if ln.startswith("LLVM >= 21"))
    assert line21.split()[-4:] == ["6.00", "7.00", "8.00", "1.33x"]
    assert "driver floor" in text and "driver graph floor" in text and "Python" in text
