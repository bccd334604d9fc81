# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The benchmark suite and `mgpu-cached bench` without a GPU: runner arguments, blob extraction,
consistency checks, table formatting, the harness against the recording fake driver, the PTX the
package ships, and the plain no-GPU message. No timing is asserted anywhere."""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import mgpu_cached
from conftest import CC, ROOT, cuda_include, ptx
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


# ---- the suite's extras (issue 21 item 6) -------------------------------------------------------

def test_parse_args_extras():
    assert run.parse_args(["--out", "d"]).extras == []
    assert run.parse_args(["--out", "d", "--extras", "all"]).extras == list(run.EXTRAS)
    a = run.parse_args(["--out", "d", "--extras", "first_call,threads"])
    assert a.extras == ["threads", "first_call"] and not a.extras_only  # run in EXTRAS order
    assert run.parse_args(["--out", "d", "--extras", "alloc", "--extras-only"]).extras_only
    for bad in (["--extras", "nope"], ["--extras", "threads,sparse"], ["--extras-only"]):
        with pytest.raises(SystemExit):
            run.parse_args(["--out", "d", *bad])


def _flag(cmd, name):
    return cmd[cmd.index(name) + 1] if name in cmd else None


def test_extra_plan_passes_the_preloaded_tree_on(tmp_path):
    a = run.parse_args(["--out", str(tmp_path), "--extras", "all", "--llvm", "19,22",
                        "--rounds", "2", "--config", "before:LD_PRELOAD=/t/libmgpu_cached.so",
                        "--config", "nograph:MGPU_CACHED_GRAPH=0"])
    plan = {ex.name: ex for ex in run.extra_plan(a)}
    assert list(plan) == list(run.EXTRAS)
    thr, ch, al, fc = (plan[n] for n in run.EXTRAS)
    assert thr.command[1].endswith("benchmarks/conc/throughput.py") and "--diagnose" in thr.command
    assert _flag(thr.command, "--before") == "/t/libmgpu_cached.so"
    assert _flag(al.command, "--before") == "/t/libmgpu_cached.so" and "--pairs" in al.command
    assert _flag(fc.command, "--before") == "/t"  # first_call.py takes the library's folder
    assert _flag(ch.command, "--llvm") == "22,19" and _flag(ch.command, "--k") == "10,100"
    assert "--before" not in ch.command and "no --before column" in ch.note
    assert all("nograph" in ex.note for ex in plan.values())  # no column for it anywhere
    assert ch.table == tmp_path / "extras" / "chains" / "chains.md"
    assert _flag(ch.command, "--out") == str(tmp_path / "extras" / "chains")
    assert thr.table == tmp_path / "extras" / "threads.txt" and thr.data is None
    plain = run.extra_plan(run.parse_args(["--out", "d", "--extras", "alloc,first_call",
                                           "--llvm", "22"]))
    assert all("--before" not in ex.command and not ex.note for ex in plain)
    assert _flag(plain[1].command, "--llvm") == "22"
    odd = run.extra_plan(run.parse_args(["--out", "d", "--extras", "first_call",
                                         "--config", "b:LD_PRELOAD=/t/other.so"]))
    assert "--before" not in odd[0].command and "not named so" in odd[0].note


def _script(tmp_path, name, body):
    path = tmp_path / f"{name}.py"
    path.write_text(body)
    return [sys.executable, str(path)]


def test_main_appends_the_extras_tables(tmp_path, monkeypatch):
    """--extras-only with stand-in scripts: a printed table and a markdown table merged into
    results.md, their data into results.json, a failing script a problem (exit 1)."""
    out = tmp_path / "out"
    md_dir = out / "extras" / "chains"
    chains = _script(tmp_path, "chains", (
        "import json, pathlib\n"
        f"d = pathlib.Path({str(md_dir)!r}); d.mkdir(parents=True, exist_ok=True)\n"
        "(d / 'chains.md').write_text('# K launches\\n\\n| K | x |\\n| --- | --- |\\n| 10 | 1 |\\n')\n"
        "(d / 'chains.json').write_text(json.dumps({'10:19:chain': [1.5]}))\n"))
    threads = _script(tmp_path, "threads", "print('threads  driver  cached\\n1  10  11')\n")
    broken = _script(tmp_path, "broken", "import sys; sys.exit('no GPU here')\n")

    def plan(args):
        return [run.Extra("threads", threads, out / "extras" / "threads.txt", None),
                run.Extra("chains", chains, md_dir / "chains.md", md_dir / "chains.json",
                          "chains.py has no --before column"),
                run.Extra("alloc", broken, out / "extras" / "alloc.txt", None)]

    monkeypatch.setattr(run, "extra_plan", plan)
    rc = run.main(["--out", str(out), "--extras", "all", "--extras-only"])
    assert rc == 1
    md = (out / "results.md").read_text()
    assert "# MLIR programs" not in md  # --extras-only: no programs ran
    assert "## threads" in md and "```\nthreads  driver  cached\n1  10  11\n```" in md
    assert "## chains" in md and "## K launches" in md and "| 10 | 1 |" in md
    assert "chains.py has no --before column" in md
    assert "## alloc" in md and "FAILED (extra alloc: exit 1)" in md
    assert (out / "extras" / "threads.txt").read_text().startswith("threads  driver")
    assert "no GPU here" in (out / "extras" / "alloc.log").read_text()
    res = json.loads((out / "results.json").read_text())
    by = {e["name"]: e for e in res["extras"]}
    assert by["chains"]["data"] == {"10:19:chain": [1.5]} and by["chains"]["returncode"] == 0
    assert by["threads"]["table"].startswith("threads") and by["alloc"]["returncode"] == 1
    assert res["problems"] == ["extra alloc: exit 1"] and res["cells"] == []


# ---- mgpu-cached bench: threads and alloc rows ---------------------------------------------------

def test_bench_rows_option():
    assert bench.parse_rows("alloc,launch") == ["launch", "alloc"]
    assert [s for s, _, _ in bench.plan(["threads"])] == ["threadsfloor", "threads", "threads"]
    assert [s for s, _, _ in bench.plan(["alloc"])] == ["allocfloor", "alloc", "alloc"]
    assert len(bench.plan()) == len(bench.plan(["launch"])) + 6
    for bad in ("", "chains", "launch,first_call"):
        with pytest.raises(ValueError):
            bench.parse_rows(bad)


def test_bench_table_threads_and_alloc():
    res = {}
    for i, t in enumerate(bench.THREADS):
        for col, v in (("driver", 2.0), ("cached", 1.0 + i), ("stock", 4.0)):
            key = bench.row_key("threads", col, str(t))
            res[key] = bench.Result(key, [v] * 3)
    for col, v in (("driver", 10.0), ("cached", 5.0), ("stock", 20.0)):
        key = bench.row_key("alloc", col, "device 256 B")
        res[key] = bench.Result(key, [v])
    text = bench.format_table(res, "GPU", 300, 1).splitlines()
    assert not any(ln.startswith("LLVM") for ln in text)  # no launch rows measured
    rows = {ln.split()[0]: ln.split() for ln in text if ln[:2].strip().isdigit()}
    assert rows["1"][1:] == ["2.00", "1.00", "4.00", "2.00x", "0.50x"]  # driver / this one
    assert rows["16"][1:4] == ["2.00", "3.00", "4.00"]
    line = next(ln for ln in text if ln.startswith("device 256 B"))
    assert line.split()[3:] == ["10.00", "5.00", "20.00", "0.25x", "0.50x"]
    assert not any(ln.startswith("host_shared") for ln in text)  # not measured: no row
    assert any("benchmarks/run.py --extras chains,first_call" in ln for ln in text)
    assert bench.alloc_key("device", 64 << 20) == "device 64 MiB"
    assert bench.alloc_key("host_shared", 1024) == "host_shared 1 KiB"


def _bench_env(fake_driver_build):
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake_driver_build))
    for var in ("MGPU_CACHED_DISABLE", "MGPU_CACHED_GRAPH", "MGPU_CACHED_BACKEND"):
        env.pop(var, None)
    return env


def test_bench_against_the_fake_driver_prints_every_row(fake_driver_build):
    """The whole bench, every group, against the recording fake: every row printed, exit 0."""
    out = subprocess.run([sys.executable, "-m", "mgpu_cached", "bench", "--iterations", "12",
                          "--rounds", "1"], env=_bench_env(fake_driver_build),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    lines = out.stdout.splitlines()
    assert "device: fake CUDA device 0; 12 iterations x 1 rounds per row; µs per iteration" in lines
    starts = [ln.split("  ")[0].strip() for ln in lines]
    for label in ("LLVM <= 20 (load per launch)", "LLVM >= 21 (load in a constructor)",
                  "driver floor (launch + sync)"):
        assert label in starts
    for t in bench.THREADS:
        row = next(ln for ln in lines if ln.split()[:1] == [str(t)])
        assert len(row.split()) == 6 and row.endswith("x")
    for kind in bench.ALLOC_KINDS:
        for size in bench.ALLOC_SIZES:
            row = next(ln for ln in lines if ln.startswith(bench.alloc_key(kind, size) + " "))
            assert row.split()[-2:][0].endswith("x") and row.endswith("x")


def test_bench_rows_pick_the_groups(fake_driver_build):
    env = _bench_env(fake_driver_build)
    out = subprocess.run([sys.executable, "-m", "mgpu_cached", "bench", "--iterations", "6",
                          "--rounds", "1", "--rows", "alloc"], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "device 256 B" in out.stdout and "LLVM" not in out.stdout
    assert "threads, each on its own stream" not in out.stdout
    assert out.stderr.count("round 1:") == 3  # three workers: driver, cached, stock
    bad = subprocess.run([sys.executable, "-m", "mgpu_cached", "bench", "--rows", "chains"],
                         env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and "--rows" in bad.stderr and "Traceback" not in bad.stderr


# ---- chains.py's 19ro shape: the blob in a loaded object's .rodata -------------------------------

def test_chains_rodata_object_holds_the_blob_and_its_hits_are_not_compared(tmp_path, make_runtime):
    """chains.py --llvm 19ro loads LLVM <= 20 code's blob from a shared object's .rodata, where
    MLIR's AOT code keeps it: the object holds the bytes exactly, and the module cache's hits on it
    skip the comparison that a heap blob costs (verify_skips, no verify_bytes)."""
    spec = importlib.util.spec_from_file_location("bench_chains", ROOT / "benchmarks" / "chains.py")
    chains = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(chains)
    data = ptx("empty", pad="//" + "x" * 4000 + "\n")  # above the cache's 2 KiB comparison floor
    (tmp_path / "blob.ptx").write_bytes(data)
    so = chains.rodata_object(tmp_path / "blob.ptx", tmp_path / "libchainblob.so")
    lib = ctypes.CDLL(str(so))
    start = ctypes.addressof(ctypes.c_char.in_dll(lib, "chain_blob_start"))
    end = ctypes.addressof(ctypes.c_char.in_dll(lib, "chain_blob_end"))
    assert ctypes.string_at(start, end - start) == data
    rt = make_runtime()
    for _ in range(4):
        m = rt.mgpuModuleLoad(ctypes.c_void_p(start), end - start)
        assert rt.mgpuModuleGetFunction(m, b"empty")
        rt.mgpuModuleUnload(m)
    st = rt.stats()
    assert (st["module_hits"], st["verify_skips"], st["verify_bytes"]) == (3, 3, 0)


# ---- chain_split_probe.c: a chain's launches and synchronisation timed apart -----------------------

def _probe_setup(tmp_path, fake_driver_build):
    """What a probe that includes cuda.h needs against the fake driver: the CUDA include folder
    (skips without a C compiler or cuda.h), the empty kernel's fatbin and a folder where the fake
    driver is libcuda."""
    if CC is None:
        pytest.skip("no C compiler")
    inc = cuda_include()
    if inc is None:
        pytest.skip("cuda.h is not installed (CUDA toolkit; set CUDA_PATH): the probe includes it")
    blob = tmp_path / "empty.fatbin"
    blob.write_bytes(run.extract_blob((OBJECTS / "empty_loop_llvm22.o").read_bytes()))
    drv = tmp_path / "drv"
    drv.mkdir()
    (drv / "libcuda.so").symlink_to(fake_driver_build)
    (drv / "libcuda.so.1").symlink_to(fake_driver_build)
    return inc, blob, drv


def _chain_probe(tmp_path, fake_driver_build, source):
    """benchmarks/SOURCE, a chain probe, built against the fake driver with the empty kernel's blob
    linked into its .rodata: (the program, the blob, the fake driver's folder)."""
    inc, blob, drv = _probe_setup(tmp_path, fake_driver_build)
    spec = importlib.util.spec_from_file_location("bench_chains", ROOT / "benchmarks" / "chains.py")
    chains = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(chains)
    exe = tmp_path / Path(source).stem
    subprocess.run([CC, "-std=c11", "-D_GNU_SOURCE", "-O1", f"-I{inc}", f"-I{ROOT / 'csrc'}",
                    "-o", str(exe),
                    str(ROOT / "benchmarks" / source),
                    str(chains.rodata_asm(blob, tmp_path / "blob_exe.S")),
                    *mgpu_cached.ldflags_list(), f"-L{drv}", "-lcuda", "-lm"], check=True)
    return exe, blob, drv


def _chain_env(drv, stats):
    """A chain probe's environment: the fake driver of `drv`, counters into `stats`, chain replay
    on (with the tagged handles it needs)."""
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(drv / "libcuda.so.1"),
               LD_LIBRARY_PATH=str(drv), MGPU_CACHED_STATS_FILE=str(stats),
               MGPU_CACHED_CHAIN="1", MGPU_CACHED_STREAM_HANDLES="tagged")
    env.pop("MGPU_CACHED_DISABLE", None)
    return env


def test_chain_split_probe_defers_every_launch_of_each_shape(tmp_path, fake_driver_build):
    """benchmarks/chain_split_probe.c against the fake driver (linked as libcuda, the same instance
    the library loads): each mode prints its JSON line, and with chain replay on every launch of
    both LLVM shapes is deferred (the LLVM <= 20 shape's unloads keep the module cached, so they
    submit nothing), one chain exec replayed per chain once it exists; the hand-made graph makes
    no mgpu* call. The executable blob's hits are not compared, the heap blob's are."""
    exe, blob, drv = _chain_probe(tmp_path, fake_driver_build, "chain_split_probe.c")
    k, n = 4, 20
    for mode in ("mgpu", "mgpu19exe", "mgpu19", "mgpuid", "cu_graphK"):
        stats = tmp_path / f"{mode}.json"
        env = _chain_env(drv, stats)
        p = subprocess.run([str(exe), str(blob), mode, str(k), str(n)], env=env,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        res = json.loads(p.stdout)
        assert res["mode"] == mode and res["k"] == k
        assert all(res[f] >= 0 for f in ("launch_us", "sync_us", "total_us"))
        st = json.loads(stats.read_text())["stats"]
        chains_run = 200 + n  # warm-up chains included
        if mode == "cu_graphK":
            assert st["launches"] == 0
            continue
        assert st["launches"] == st["chain_deferred"]
        assert st["chain_deferred"] >= k * chains_run
        assert st["chain_replays"] >= chains_run - 3
        if mode.startswith("mgpu19"):
            assert st["module_hits"] == k * chains_run
            assert (st["verify_bytes"] > 0) == (mode == "mgpu19"), st


@pytest.mark.parametrize("same_stream", [False, True])
def test_chain_pair_probe_runs_every_shape_and_the_graph_in_one_process(tmp_path,
                                                                          fake_driver_build,
                                                                          same_stream):
    """benchmarks/chain_pair_probe.c against the fake driver (linked as libcuda): one JSON line with
    a ratio per shape; with chain replay on, every launch of each shape is deferred and chains are
    replayed (each block's first chain takes the full path: the block before used another
    stream), every load of the two LLVM <= 20 shapes is a cache hit, and only the heap blob's hits
    compare bytes. With benchmarks/harness/graph_stream_shim.c as the library's driver
    (same_stream), the line adds each shape against the graph on its own driver stream and the
    graph on 8 streams of the probe's; the library's calls are the same."""
    exe, blob, drv = _chain_probe(tmp_path, fake_driver_build, "chain_pair_probe.c")
    k, n, rounds = 4, 6, 3
    stats = tmp_path / "stats.json"
    env = _chain_env(drv, stats)
    if same_stream:
        shim = tmp_path / "graph_stream_shim.so"
        subprocess.run([CC, "-shared", "-fPIC", "-O1", "-o", str(shim),
                        str(ROOT / "benchmarks" / "harness" / "graph_stream_shim.c"), f"-L{drv}",
                        "-Wl,--no-as-needed", "-lcuda", "-ldl"], check=True)
        env.update(MGPU_CACHED_CUDA_DRIVER=str(shim), CHAIN_PAIR_SHIM=str(shim))
    p = subprocess.run([str(exe), str(blob), str(k), str(n), str(rounds)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)
    assert res["k"] == k and res["rounds"] == rounds
    assert set(res["ratio"]) == set(res["us"]) == {"22", "exe", "heap", "exe+memcmp", "exe+same",
                                                   "graph+same"}
    assert set(res["calls_ns"]) == {"exe", "heap"}
    calls = {"load", "get", "launch", "unload", "first_load", "first_get", "first_launch",
             "first_unload", "sync"}
    assert all(set(c) == calls and min(c.values()) > 0 for c in res["calls_ns"].values())
    assert set(res["sync_ns"]) == {"22", "22x", "exe_held"} and min(res["sync_ns"].values()) > 0
    assert len(res["stream_sync_ns"]) == 5 and min(res["stream_sync_ns"]) > 0
    assert all(v > 0 for v in res["ratio"].values()) and res["graph_us"] > 0
    if same_stream:  # every shape's blocks found the stream its chains were replayed on
        assert set(res["ratio_same"]) == set(res["graph_same_us"]) == set(res["ratio"])
        assert min(res["ratio_same"].values()) > 0 and min(res["graph_same_us"].values()) > 0
        assert len(res["stream_graph_us"]) == 8 and min(res["stream_graph_us"]) > 0
    else:
        assert "ratio_same" not in res
    st = json.loads(stats.read_text())["stats"]
    chains_per_shape = n * (rounds + 1)  # the warm-up round included
    split = 2 * k * n  # the exe and heap shapes' chains with each call timed
    held = 7 * k * n  # the synchronisations of the kernels alone (on each stream) and of the exe
    # shape held
    assert st["launches"] == st["chain_deferred"] == 5 * k * chains_per_shape + split + held
    assert st["chain_replays"] >= 5 * (chains_per_shape - (rounds + 1) * 2)
    # the exe shapes' first load is a miss; the heap shape's all hit the module the 22 shape loaded
    assert st["module_hits"] == 4 * k * chains_per_shape - 1 + split + 1 + k * n
    assert st["verify_bytes"] == (k * chains_per_shape + k * n) * blob.stat().st_size


def test_same_bytes_bench_times_both_comparisons(tmp_path):
    """benchmarks/same_bytes_bench.c, built with the library's comparison compiled in: it names the
    comparison mc_same_bytes uses here and prints a line per size and layout, both timings
    positive (each comparison found the ranges equal)."""
    if CC is None:
        pytest.skip("no C compiler")
    exe = tmp_path / "sbb"
    subprocess.run([CC, "-std=c11", "-D_GNU_SOURCE", "-O2", f"-I{ROOT / 'csrc'}",
                    f"-I{ROOT / 'benchmarks'}", "-o", str(exe),
                    str(ROOT / "benchmarks" / "same_bytes_bench.c"),
                    str(ROOT / "csrc" / "support" / "same_bytes.c"), "-lm"], check=True)
    p = subprocess.run([str(exe), "100", "3700"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] in ("mc_same_bytes here: avx512", "mc_same_bytes here: memcmp")
    rows = [line for line in lines[1:] if line.startswith("size ")]
    assert len(rows) == 8
    for row in rows:
        m = float(row.split("memcmp ")[1].split(" ns")[0])
        s = float(row.split("mc_same_bytes ")[1].split(" ns")[0])
        assert m > 0 and s > 0
    assert subprocess.run([str(exe)], capture_output=True).returncode == 2


def test_graph_split_probe_runs_one_graph_or_two(tmp_path, fake_driver_build):
    """benchmarks/graph_split_probe.c against the fake driver (linked as libcuda): one graph (M = 0)
    or two (the first M nodes, then the rest), with host work spun per node; each run prints its
    JSON line, and arguments out of range are refused (exit 2)."""
    inc, blob, drv = _probe_setup(tmp_path, fake_driver_build)
    exe = tmp_path / "gsp"
    subprocess.run([CC, "-std=c11", "-D_GNU_SOURCE", "-O1", f"-I{inc}", "-o", str(exe),
                    str(ROOT / "benchmarks" / "graph_split_probe.c"), f"-L{drv}", "-lcuda", "-lm"],
                   check=True)
    env = dict(os.environ, LD_LIBRARY_PATH=str(drv))
    for m, spin in ((0, 0), (3, 0), (3, 50)):
        p = subprocess.run([str(exe), str(blob), "8", str(m), str(spin), "5"], env=env,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        res = json.loads(p.stdout)
        assert (res["k"], res["m"], res["spin_ns"]) == (8, m, spin) and res["total_us"] > 0
    for bad in (["8", "8", "0", "5"], ["1", "0", "0", "5"], ["8", "0", "0", "1"]):
        p = subprocess.run([str(exe), str(blob), *bad], env=env, capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == 2


def test_chain_split_table_splits_rounds_by_the_hosts_speed(tmp_path):
    """benchmarks/chain_split_table.py: the chain against the same round's hand-made graph, over
    every round and over the rounds of the fast and the slow host (split at the median of the
    throughput calibration), and a library's launches part against the first one's per round."""
    spec = importlib.util.spec_from_file_location("chain_split_table",
                                                  ROOT / "benchmarks" / "chain_split_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    def line(r, lib, mode, launch, total, thr):
        return f"{r} {lib} " + json.dumps({"mode": mode, "k": 10, "launch_us": launch, "sync_us": total - launch,
                                           "total_us": total, "calib_ns": [1.4, 1.4],
                                           "calib_thr_ns": [thr, thr + 0.1]})
    raw = tmp_path / "split.raw"
    raw.write_text("\n".join([
        line(1, "now", "mgpu19exe", 2.0, 16.0, 0.8), line(1, "start", "mgpu19exe", 2.2, 16.2, 0.8),
        line(1, "now", "cu_graphK", 2.0, 14.0, 0.8),
        line(2, "now", "mgpu19exe", 3.0, 17.5, 1.2), line(2, "start", "mgpu19exe", 3.3, 17.8, 1.2),
        line(2, "start", "cu_graphK", 2.0, 14.0, 1.2)]) + "\n")
    out = "\n".join(mod.table(mod.load(str(raw))))
    assert "| 10 | now | mgpu19exe | 2.50 | 14.25 | 1.196× | 1.143× (1) | 1.250× (1) |" in out
    assert "| 10 | start | mgpu19exe | 2.75 |" in out
    assert "K=10 mgpu19exe: start / now 1.100× (2 rounds)" in out
    assert "heap shape" not in out  # no heap rows, no comparison line


def test_chain_split_table_sets_the_heap_shape_against_its_comparisons(tmp_path):
    """The heap shape's chain against the executable shape's plus the heap shape's K blob
    comparisons (compare_us), per round."""
    spec = importlib.util.spec_from_file_location("chain_split_table",
                                                  ROOT / "benchmarks" / "chain_split_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    def line(r, mode, total, compare):
        return f"{r} now " + json.dumps({"mode": mode, "k": 10, "launch_us": 1.0, "sync_us": total - 1.0,
                                         "total_us": total, "calib_ns": [1.4, 1.4],
                                         "calib_thr_ns": [0.5, 0.5], "compare_us": compare})
    raw = tmp_path / "split.raw"
    raw.write_text("\n".join([line(1, "mgpu19exe", 15.0, 0.4), line(1, "mgpu19", 15.5, 0.5),
                              line(1, "cu_graphK", 14.0, 0.4), line(2, "mgpu19exe", 16.0, 0.4),
                              line(2, "mgpu19", 17.6, 0.6), line(2, "cu_graphK", 14.0, 0.4)]) + "\n")
    out = "\n".join(mod.table(mod.load(str(raw))))
    # round 1: 15.5 / (15.0 + 0.5) = 1.000; round 2: 17.6 / (16.0 + 0.6) = 1.0602
    assert "  K=10 now: 1.030× (2 rounds; K comparisons 0.55 µs)" in out


def test_attribution_variants_apply_to_this_tree(tmp_path):
    """benchmarks/neighbour/attribution_variants.py finds each of its anchors exactly once in
    csrc/ (it exits 1 otherwise), and every C file a variant edits still compiles."""
    spec = importlib.util.spec_from_file_location(
        "attribution_variants", ROOT / "benchmarks/neighbour/attribution_variants.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    p = subprocess.run([sys.executable, spec.origin, str(ROOT / "csrc"), str(tmp_path)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert {"noquery", "noverify", "blocking"} <= set(mod.EDITS)
    if CC is None:
        pytest.skip("no C compiler")
    for name, edits in mod.EDITS.items():
        src = tmp_path / name / "csrc"
        for rel in sorted({rel for rel, _, _ in edits if rel.endswith(".c")}):
            subprocess.run([CC, "-std=c11", "-D_GNU_SOURCE", "-fsyntax-only", f"-I{src}",
                            str(src / rel)], check=True)


# ---- host work per iteration, counted under callgrind (benchmarks/fake_instructions.py) ---------

def _fake_instructions():
    spec = importlib.util.spec_from_file_location(
        "fake_instructions", ROOT / "benchmarks" / "fake_instructions.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_launch_paths_look_thread_locals_up_once_per_call(fake_driver_build):
    """Issue 21 (fourth session of 2026-11-26): the library's calls to __tls_get_addr per
    iteration of the README's synchronous program, counted under callgrind against the fake
    driver: 16 with LLVM 19 code (load, look-up, create, launch, sync, destroy, unload) and 14
    with LLVM 22 code (fifth session: the default device and the context enter's state without
    a look-up of their own; 20 and 17 before it); the code before the fourth session measured 34
    and 27 (GCC looked a thread-local up again at each use). A count, not a time: the same on
    every run of a build."""
    import shutil
    if CC is None or not shutil.which("valgrind"):
        pytest.skip("needs valgrind and a C compiler (valgrind counts the calls)")
    fi = _fake_instructions()
    res = fi.measure(["empty"], [19, 22], 100, str(mgpu_cached.libdir()), str(fake_driver_build))
    assert res["empty 19"]["library tls calls"] <= 18, res
    assert res["empty 22"]["library tls calls"] <= 16, res
    assert res["empty 19"]["library instructions"] > 0 and res["empty 22"]["instructions"] > 0


def test_callgrind_parser_counts_own_instructions_and_tls_calls(tmp_path):
    """parse_callgrind: a function's own cost lines count, the inclusive cost of a call it makes
    does not, and calls to __tls_get_addr count only from the library's object."""
    out = tmp_path / "cg"
    out.write_text("events: Ir\nsummary: 100\n"
                   "ob=(1) /x/libmgpu_cached.so\nfn=(1) f\n10 7\n"
                   "cob=(2) /lib/ld.so\ncfn=(2) __tls_get_addr\ncalls=3 0\n10 30\n+1 2\n"
                   "ob=(3) /x/other.so\nfn=(3) g\n5 40\ncfn=(2)\ncalls=4 0\n5 12\n")
    assert _fake_instructions().parse_callgrind(out) == (100, 9, 3)


# ---- paired.py: per-round ratios of two runtimes of one run ----------------------------------------

def test_paired_ratios_cancel_a_drift_between_rounds(tmp_path):
    """benchmarks/paired.py pairs two runtimes round by round: a machine that slows down between
    rounds moves both, so the per-round ratio stays exact where the ratio of the overall medians
    does not; the bootstrap interval of identical ratios is that ratio; a missing cell is skipped."""
    spec = importlib.util.spec_from_file_location("bench_paired", ROOT / "benchmarks" / "paired.py")
    paired = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(paired)
    drift = [10.0, 10.0, 10.0, 20.0, 20.0, 20.0, 40.0, 40.0, 40.0, 41.0, 40.0, 39.0]  # 4 rounds
    a = [x * 1.05 for x in drift]
    med, lo, hi, n = paired.paired(a, drift, 3)
    assert n == 4 and abs(med - 1.05) < 1e-9 and abs(lo - 1.05) < 1e-9 and abs(hi - 1.05) < 1e-9
    a_late = [x * (1.2 if i >= 6 else 1.0) for i, x in enumerate(drift)]  # slower in 2 of 4 rounds
    med, lo, hi, _ = paired.paired(a_late, drift, 3)
    assert abs(med - 1.1) < 1e-9 and abs(lo - 1.0) < 1e-9 and abs(hi - 1.2) < 1e-9
    res = {"args": {"reps": 3}, "cells": [
        {"program": "async", "llvm": 22, "runtime": "cached", "samples_us": a},
        {"program": "async", "llvm": 22, "runtime": "before", "samples_us": drift}]}
    (tmp_path / "r.json").write_text(json.dumps(res))
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "paired.py"), str(tmp_path / "r.json"),
                          "cached", "before", "cached", "other"], capture_output=True, text=True)
    assert out.returncode == 0
    assert out.stdout.splitlines() == [
        "async LLVM 22 cached / before: 1.050× per round (90% [1.050, 1.050], 4 rounds); "
        "ratio of medians 1.050×"]
    usage = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "paired.py"), "x.json", "a"],
                           capture_output=True, text=True)
    assert usage.returncode == 2 and "paired.py RESULTS.json A B" in usage.stderr


def test_paired_chains_per_round(tmp_path):
    """paired.py --chains: chain replay against the same round's hand-made graph and against the
    program without chain replay, per K and LLVM shape, with the lowest and highest round."""
    data = {"10:-:graphK floor": [10.0, 10.0, 10.0, 20.0, 20.0, 20.0],
            "10:22:chain": [11.0, 11.0, 11.0, 24.0, 24.0, 24.0],
            "10:22:default": [22.0, 22.0, 22.0, 24.0, 24.0, 24.0]}
    (tmp_path / "chains.json").write_text(json.dumps(data))
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "paired.py"), "--chains",
                          str(tmp_path / "chains.json"), "3"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "K=10 LLVM 22 chain / hand-made graph: 1.150× per round (90% [1.100, 1.200], 2 rounds; "
        "lowest 1.100×, highest 1.200×)",
        "K=10 LLVM 22 chain / without chain replay: 0.750× per round (90% [0.500, 1.000], 2 rounds; "
        "lowest 0.500×, highest 1.000×)"]


# ---- abi_time: host time per mgpu* entry point -------------------------------------------------------

def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_abi_time_shim_counts_every_call_and_forwards_it(harness_build, fake_driver_build, tmp_path):
    """benchmarks/harness/abi_time.c, preloaded, wraps each mgpu* entry point: the program still
    runs every launch (the library's own count), and the shim counts each call with a time."""
    if CC is None:
        pytest.skip("no C compiler")
    shim = tmp_path / "abi_time.so"
    subprocess.run([CC, "-O2", "-shared", "-fPIC", "-o", str(shim),
                    str(ROOT / "benchmarks/harness/abi_time.c"), "-ldl"], check=True)
    counts, stats = tmp_path / "counts.txt", tmp_path / "stats.json"
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake_driver_build), LD_PRELOAD=str(shim),
               ABI_TIME_OUT=str(counts), MGPU_CACHED_STATS_FILE=str(stats))
    env.pop("MGPU_CACHED_DISABLE", None)
    out = subprocess.run([str(harness_build["empty"]), "10", "3", "4"], env=env,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    abi_time = _load("bench_abi_time", ROOT / "benchmarks" / "abi_time.py")
    got = abi_time.read_counts(counts)
    launches = json.loads(stats.read_text())["stats"]["launches"]
    assert launches == 4 + 3 * 10
    assert got["mgpuLaunchKernel"][0] == launches and got["mgpuLaunchKernel"][1] > 0
    assert set(got) <= {"mgpuModuleLoad", "mgpuModuleUnload", "mgpuModuleGetFunction",
                        "mgpuLaunchKernel", "mgpuStreamCreate", "mgpuStreamDestroy",
                        "mgpuStreamSynchronize", "mgpuMemAlloc", "mgpuMemFree"}


def test_abi_time_per_step_and_table():
    """Per step = (the 2n-step run - the n-step run) / n, entry point by entry point (one that only
    the setup calls drops out); the table gives each runtime's median and its difference."""
    abi_time = _load("bench_abi_time", ROOT / "benchmarks" / "abi_time.py")
    small = {"mgpuLaunchKernel": (110, 11_000), "mgpuModuleLoad": (1, 5_000)}
    big = {"mgpuLaunchKernel": (210, 21_000), "mgpuModuleLoad": (1, 5_000)}
    assert abi_time.per_step(small, big, 100) == {"mgpuLaunchKernel": (1.0, 100.0)}
    rounds = {("empty", 22, "cached"): [{"mgpuLaunchKernel": (1.0, 2000.0)}] * 3,
              ("empty", 22, "before"): [{"mgpuLaunchKernel": (1.0, 1500.0)}] * 3}
    md = abi_time.table(rounds, ["empty"], [22], ["cached", "before"])
    assert "| mgpuLaunchKernel | 1.00 | 2.00 | 1.50 | -0.50 |" in md
    assert "| **all** |  | 2.00 | 1.50 | -0.50 |" in md


def test_medians_table_of_a_run_scripts_samples():
    """benchmarks/medians.py (the run scripts' alloc_loop tables): per LLVM version and
    configuration the median over rounds, columns in first-seen order; a failed run's empty value
    is skipped, a missing cell shows as a dash."""
    medians = _load("bench_medians", ROOT / "benchmarks" / "medians.py")
    lines = ["1 19 a 10", "1 19 b 20", "1 22 a 30", "2 19 a 12", "2 19 b", "2 19 b 26",
             "2 22 a 31", "3 19 a 11", "3 19 b 21", "3 22 a 35"]
    md = medians.table(lines)
    assert md.splitlines()[:4] == ["| LLVM | a | b |", "| --- | --- | --- |",
                                   "| 19 | 11.00 | 21.00 |", "| 22 | 31.00 | – |"]
    assert md.endswith("µs per step, median of 3 interleaved rounds")


def test_medians_per_round_ratio_cancels_a_drift(tmp_path):
    """benchmarks/medians.py --ratio A B: the median over rounds of A / B within a round; a round
    missing B (a failed run) is skipped; the plain medians are unchanged."""
    spec = importlib.util.spec_from_file_location("bench_medians", ROOT / "benchmarks" / "medians.py")
    medians = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(medians)
    lines = []
    for rnd, drift in enumerate([10.0, 20.0, 40.0, 80.0], 1):
        lines += [f"{rnd} 256 cached {drift * 1.02}", f"{rnd} 256 stock {drift}"]
    lines += ["5 256 cached 1.0", "5 256 stock failed"]  # no stock value in round 5
    rr = medians.round_ratios(lines, "cached", "stock")
    assert len(rr["256"]) == 4 and all(abs(r - 1.02) < 1e-9 for r in rr["256"])
    md = medians.table(lines, "us", ratio=("cached", "stock"))
    assert "| 256 | 20.40 | 30.00 | 1.020× (1.020, 1.020) |" in md  # round 5 counts in the medians
    assert "cached / stock per round" in md.splitlines()[0]
    assert "ratio" not in medians.table(lines, "us").splitlines()[0]


def test_launch_path_probe_times_the_thread_cache_hit_path(tmp_path):
    """benchmarks/conc/launch_path.py's probe against quick_driver.c over the fake driver: every
    mode prints a time per thread count, every iteration launched through the library (its
    `launches` counter), and in the LLVM <= 20 shapes every load but each thread's first was
    answered from the thread's cache (the path the probe is meant to time)."""
    if CC is None:
        pytest.skip("no C compiler")
    spec = importlib.util.spec_from_file_location("launch_path",
                                                  ROOT / "benchmarks" / "conc" / "launch_path.py")
    lp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lp)
    exe, quick = lp.build(tmp_path)
    env = dict(os.environ, MGPU_CACHED_BACKEND="cuda", MGPU_CACHED_GRAPH="0",
               MGPU_CACHED_CUDA_DRIVER=str(quick))
    env.pop("MGPU_CACHED_DISABLE", None)
    iters = 300
    for mode in lp.MODES:
        out = subprocess.run([str(exe), mode, str(lp.BLOB), str(iters), "1", "2"], env=env,
                             check=True, capture_output=True, text=True).stdout.split("\n")
        assert [x.split()[:2] for x in out[:2]] == [[mode, "1"], [mode, "2"]]
        assert all(float(x.split()[2]) > 0 for x in out[:2])
        stats = out[2].split()
        launches, hits = int(stats[2]), int(stats[4])
        assert launches == 3 * 5 * iters  # one thread, then two
        # each thread's set-up load takes the locked way (its cache has no entry yet)
        assert hits == (3 * 5 * iters if mode in ("exe", "heap") else 0)


def test_chain_pair_table_takes_medians_over_processes(tmp_path):
    """benchmarks/chain_pair_table.py: per K and tree the median [min, max] of each shape's ratio
    over processes, and the heap shape against the executable shape plus its comparisons."""
    spec = importlib.util.spec_from_file_location("chain_pair_table",
                                                  ROOT / "benchmarks" / "chain_pair_table.py")
    cpt = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cpt)

    def line(tree, k, ratios, heap_us):
        return tree + " " + json.dumps({"k": k, "rounds": 3, "graph_us": 10.0,
                                        "us": {"22": 11.0, "exe": 11.0, "heap": heap_us},
                                        "ratio": dict(zip(cpt.SHAPES, ratios)), "compare_us": 1.0})

    raw = [line("now", 10, (1.1, 1.2, 1.3), 12.0), line("now", 10, (1.0, 1.4, 1.5), 13.2),
           line("now", 10, (1.2, 1.3, 1.7), 14.4), "start garbage"]
    out = cpt.table(raw).splitlines()
    assert out[0] == "unparsed: start garbage"
    assert out[3] == ("| 10 | now | 3 | 1.100 [1.000, 1.200] | 1.300 [1.200, 1.400] | "
                      "1.500 [1.300, 1.700] | 1.100 | 10.00 | 1.00 |")
    # lines with each call of a link timed (runs from N144 on) get a second table
    calls = {"exe": {"load": 60.0, "get": 50.0, "launch": 70.0, "unload": 40.0},
             "heap": {"load": 100.0, "get": 50.0, "launch": 71.0, "unload": 40.0}}
    timed = [line("now", 10, (1.1, 1.2, 1.3), 12.0)[:-1] + ", \"calls_ns\": " + json.dumps(calls) + "}"]
    out = cpt.table(timed).splitlines()
    assert out[-4:] == ["| 10 | now | load | 60.0 | 100.0 | +40.0 |",
                        "| 10 | now | get | 50.0 | 50.0 | +0.0 |",
                        "| 10 | now | launch | 70.0 | 71.0 | +1.0 |",
                        "| 10 | now | unload | 40.0 | 40.0 | +0.0 |"]
    # and with the kernels' synchronisations (runs from N146 on) a third
    calls["exe"]["sync"], calls["heap"]["sync"] = 1000.0, 1300.0
    synced = [line("now", 10, (1.1, 1.2, 1.3), 12.0)[:-1] + ", \"calls_ns\": " + json.dumps(calls) +
              ", \"sync_ns\": " + json.dumps({"22": 1290.0, "22x": 1010.0, "exe_held": 995.0}) + "}"]
    out = cpt.table(synced).splitlines()
    assert out[-3:] == ["| 10 | now | 22 | 1290.0 | +290.0 |", "| 10 | now | 22x | 1010.0 | +10.0 |",
                        "| 10 | now | exe_held | 995.0 | -5.0 |"]
    per_stream = [synced[0][:-1] + ", \"stream_sync_ns\": [1000.4, 1200.6]}"]
    assert cpt.table(per_stream).splitlines()[-1] == "| 10 | now | 1000 / 1201 |"
    # with graph+same (runs from N149 on), the heap shape against it too
    six = [line("now", 10, (1.1, 1.2, 1.3, 1.25, 1.22, 1.04), 12.0)]
    out = cpt.table(six).splitlines()
    assert "| graph+same | heap / (exe + compare) | heap / (graph+same) | graph µs |" in out[0]
    assert out[2].endswith("| 1.040 [1.040, 1.040] | 1.000 | 1.250 | 10.00 | 1.00 |")
    # lines with the same-stream ratios (runs from N153 on) get a table of their own
    same = [six[0][:-1] + ", \"ratio_same\": " +
            json.dumps(dict(zip(cpt.SHAPES, (1.05, 1.1, 1.2, 1.15, 1.12, 1.06)))) +
            ", \"graph_same_us\": " + json.dumps(dict.fromkeys(cpt.SHAPES, 10.0)) +
            ", \"stream_graph_us\": [9.5, 10.25, 9.75]}"]
    out = cpt.table(same).splitlines()
    assert out[-1] == ("| 10 | now | 1 | 1.050 [1.050, 1.050] | 1.100 [1.100, 1.100] | "
                       "1.200 [1.200, 1.200] | 1.150 [1.150, 1.150] | 1.120 [1.120, 1.120] | "
                       "1.060 [1.060, 1.060] | 1.132 | 9.50-10.25 |")
    # lines with the in-situ comparison shapes (runs from N142 on) get their columns
    five = [line("now", 10, (1.1, 1.2, 1.3, 1.25, 1.22), 12.0)]
    out = cpt.table(five).splitlines()
    assert out[0].startswith("| K | tree | processes | LLVM 22 | exe | heap | exe+memcmp | exe+same |")
    assert out[2] == ("| 10 | now | 1 | 1.100 [1.100, 1.100] | 1.200 [1.200, 1.200] | "
                      "1.300 [1.300, 1.300] | 1.250 [1.250, 1.250] | 1.220 [1.220, 1.220] | "
                      "1.000 | 10.00 | 1.00 |")
