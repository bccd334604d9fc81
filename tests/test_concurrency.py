"""Concurrency (issue 4) on the CPU, against the recording fake driver: the stream cap and its
sharing rule, handle confusion in generated code, a million-step generated async loop, many
threads (also under ThreadSanitizer), several devices, and a quiet exit after the driver is gone.

The C programs and MLIR-compiled objects are in tests/data/conc/ (see conc.mlir for what each
generated function does)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Dict, List, Optional

import pytest

import mgpu_cached
from conftest import CC, DATA, ROOT, blob_buffer, compile_shared, DRIVERS, ptx

CONC = DATA / "conc"
BLOBS = [str(DATA / f"kernels.{k}") for k in ("ptx", "fatbin", "cubin")]


def build_program(tmp_path: Path, name: str, sources: List[Path], extra: List[str] = ()) -> Path:
    if CC is None:
        pytest.skip("no C compiler")
    exe = tmp_path / name
    subprocess.run([CC, "-std=c11", "-O1", "-pthread", "-o", str(exe), *map(str, sources),
                    *extra, *mgpu_cached.ldflags_list(), "-ldl"], check=True)
    return exe


def run_program(exe: Path, args: List[str], driver: Path, tmp_path: Path,
                env: Optional[Dict[str, str]] = None, timeout: int = 120):
    """Run `exe` against `driver`; returns (completed process, the library's counters)."""
    stats = tmp_path / f"stats_{exe.name}.json"
    e = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(driver), MGPU_CACHED_STATS_FILE=str(stats),
             HARNESS_NO_CHECK="1", STRESS_NO_CHECK="1", MULTIGPU_NO_CHECK="1")
    e.pop("MGPU_CACHED_DISABLE", None)
    e.pop("MGPU_CACHED_STREAM_CAP", None)
    e.update(env or {})
    p = subprocess.run([str(exe), *args], env=e, capture_output=True, text=True, timeout=timeout)
    st = json.loads(stats.read_text())["stats"] if stats.exists() else {}
    return p, st


def conc_harness(tmp_path: Path, llvm: int) -> Path:
    return build_program(tmp_path, f"conc{llvm}", [CONC / "conc_harness.c",
                                                    CONC / f"conc_llvm{llvm}.o"])


# ---- the stream cap -------------------------------------------------------------------------------

def join(rt, s):
    """What the generated code does to a chain it joins: record an event on its stream, then wait
    for the event on another stream and destroy the event."""
    e = rt.mgpuEventCreate()
    rt.mgpuEventRecord(e, s)
    rt.mgpuEventDestroy(e)


def test_stream_cap_shares_only_idle_joined_streams(make_runtime):
    rt = make_runtime(env={"MGPU_CACHED_STREAM_CAP": "4"})
    f = rt.mgpuModuleGetFunction(rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0), b"k")
    s = [rt.mgpuStreamCreate() for _ in range(4)]  # at the cap now
    assert len(set(s)) == 4
    join(rt, s[2])
    join(rt, s[1])
    rt.fake.fake_set_busy_launches(1)
    rt.launch(f, stream=s[2])  # s[2] is busy again: never shared while it has work
    assert rt.mgpuStreamCreate() == s[1]
    st = rt.stats()
    assert (st["stream_shares"], st["live_streams"], rt.fake.count("cuStreamCreate")) == (1, 5, 4)
    # s[0], s[3] were never joined, s[1] was just given to a new owner: a new driver stream
    extra = rt.mgpuStreamCreate()
    assert extra not in s and rt.stats()["stream_cap_exceeded"] == 1
    rt.fake.fake_complete(s[2])
    assert rt.mgpuStreamCreate() == s[2]  # idle now


def test_new_handles_never_share_with_each_other(make_runtime):
    """Two chains started at the cap (like spin_pair's two `gpu.wait async`) get different streams
    even when only one idle joined stream exists."""
    rt = make_runtime(env={"MGPU_CACHED_STREAM_CAP": "2"})
    a, b = rt.mgpuStreamCreate(), rt.mgpuStreamCreate()
    join(rt, a)
    t0, t1 = rt.mgpuStreamCreate(), rt.mgpuStreamCreate()
    assert t0 == a and t1 not in (a, b, t0)
    assert rt.fake.count("cuStreamCreate") == 3


def test_shared_stream_goes_back_to_the_pool_after_every_owner(make_runtime, capfd):
    rt = make_runtime(env={"MGPU_CACHED_STREAM_CAP": "1"})
    a = rt.mgpuStreamCreate()
    join(rt, a)
    b = rt.mgpuStreamCreate()
    assert b == a
    rt.mgpuStreamDestroy(b)
    assert rt.stats()["live_streams"] == 1 and rt.stats()["pooled_streams"] == 0
    join(rt, a)  # the remaining owner joins again: shareable again
    assert rt.mgpuStreamCreate() == a
    rt.mgpuStreamDestroy(a)
    rt.mgpuStreamDestroy(a)  # last owner: back to the pool
    assert (rt.stats()["live_streams"], rt.stats()["pooled_streams"]) == (0, 1)
    rt.mgpuStreamDestroy(a)
    assert "MGPU_CACHED_DOUBLE_DESTROY" in capfd.readouterr().err
    assert rt.mgpuStreamCreate() == a and rt.fake.count("cuStreamCreate") == 1


def test_cap_zero_never_shares(make_runtime):
    rt = make_runtime(env={"MGPU_CACHED_STREAM_CAP": "0"})
    live = []
    for _ in range(100):
        s = rt.mgpuStreamCreate()
        join(rt, s)
        live.append(s)
    assert len(set(live)) == 100 and rt.stats()["stream_shares"] == 0


def test_streams_of_another_device_are_never_shared(make_runtime):
    rt = make_runtime(devices=2, env={"MGPU_CACHED_STREAM_CAP": "1"})
    a = rt.mgpuStreamCreate()
    join(rt, a)
    rt.mgpuSetDefaultDevice(1)
    b = rt.mgpuStreamCreate()
    assert b != a and rt.fake.fake_stream_device(b) == 1


@pytest.mark.parametrize("llvm", [19, 22])
def test_million_step_generated_async_loop_keeps_driver_streams_bounded(tmp_path, fake_driver_build,
                                                                         llvm):
    """join_loop: every iteration leaks two streams (joined through events, never destroyed)."""
    exe = conc_harness(tmp_path, llvm)
    n = 1_000_000 if llvm == 22 else 200_000  # 19 code also loads the module per launch
    p, st = run_program(exe, ["join", str(n)], fake_driver_build, tmp_path, timeout=600)
    assert p.returncode == 0 and p.stderr == "", p.stdout + p.stderr
    assert st["stream_creates"] == 3 * n + 1 and st["live_streams"] == 2 * n
    assert st["driver_stream_creates"] == 64  # the default cap, reached and never exceeded
    assert st["stream_cap_exceeded"] == 0 and st["errors"] == 0


def test_generated_async_loop_without_cap_grows(tmp_path, fake_driver_build):
    """The same loop with the cap off: one driver stream per leaked handle (what the cap prevents)."""
    exe = conc_harness(tmp_path, 22)
    p, st = run_program(exe, ["join", "2000"], fake_driver_build, tmp_path,
                        env={"MGPU_CACHED_STREAM_CAP": "0"})
    assert p.returncode == 0, p.stdout + p.stderr
    assert st["driver_stream_creates"] >= 4000 and st["stream_shares"] == 0


# ---- handle confusion in generated code ---------------------------------------------------------

@pytest.mark.parametrize("llvm", [19, 22])
def test_token_through_loop_stream_is_synchronised_and_released(tmp_path, fake_driver_build, llvm):
    """token_loop: the generated code passes the loop's *stream* to mgpuEventSynchronize and
    mgpuEventDestroy. It must be synchronised as a stream and go back to the pool."""
    exe = conc_harness(tmp_path, llvm)
    p, st = run_program(exe, ["token", "100"], fake_driver_build, tmp_path)
    assert p.returncode == 0 and p.stderr == "", p.stdout + p.stderr
    assert st["live_streams"] == 0 and st["errors"] == 0
    assert st["driver_stream_creates"] == 2  # the harness's own stream and the loop's, reused
    # stock behaviour: the stream goes to cuEventSynchronize / cuEventDestroy, which reject it
    p, _ = run_program(exe, ["token", "100"], fake_driver_build, tmp_path,
                       env={"MGPU_CACHED_DISABLE": "1"})
    assert "'cuEventSynchronize(event)' failed with 'CUDA_ERROR_INVALID_HANDLE'" in p.stderr


def test_token_through_loop_driver_calls(make_runtime):
    """The call sequence token_loop makes, checked call by call on the fake driver."""
    rt = make_runtime()
    f = rt.mgpuModuleGetFunction(rt.mgpuModuleLoad(blob_buffer(ptx("inc")), 0), b"inc")
    rt.fake.fake_set_busy_launches(1)
    s = rt.mgpuStreamCreate()
    for _ in range(10):
        rt.launch(f, stream=s)
    rt.fake.fake_reset()
    rt.mgpuEventSynchronize(s)
    rt.mgpuEventDestroy(s)
    # synchronized through the library just before: given back without a query ("known idle")
    assert rt.fake.log() == ["cuStreamSynchronize"]
    assert rt.stats()["stream_query_skips"] == 1
    assert rt.stats()["live_streams"] == 0 and rt.mgpuStreamCreate() == s


# ---- async chains (spin kernels) on the fake: the programs link and make the calls promised ------

@pytest.mark.parametrize("llvm", [19, 22])
def test_spin_pair_uses_two_streams_and_no_per_launch_load(tmp_path, fake_driver_build, llvm):
    exe = conc_harness(tmp_path, llvm)
    p, st = run_program(exe, ["spin", "100"], fake_driver_build, tmp_path)
    assert p.returncode == 0 and p.stderr == "", p.stdout + p.stderr
    assert st["driver_stream_creates"] == 3 and st["driver_module_loads"] == 1
    assert st["launches"] == 2 and st["errors"] == 0


# ---- threads ------------------------------------------------------------------------------------

def test_many_threads_stress(tmp_path, fake_driver_build):
    exe = build_program(tmp_path, "stress", [CONC / "stress.c"])
    p, st = run_program(exe, ["16", "300", *BLOBS], fake_driver_build, tmp_path,
                        env={"FAKECUDA_DEVICES": "2", "STRESS_DEVICES": "2"})
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stdout + p.stderr
    assert st["driver_module_loads"] == 3 * 17 and st["module_hits"] == 2 * 3 * 16 * 300 - 3 * 17
    assert st["launches"] == 2 * 16 * 300 and st["errors"] == 0


def _tsan_available(tmp_path: Path) -> Optional[str]:
    if CC is None:
        return "no C compiler"
    src = tmp_path / "t.c"
    src.write_text("int main(void) { return 0; }\n")
    r = subprocess.run([CC, "-fsanitize=thread", "-o", str(tmp_path / "t"), str(src)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return f"{CC} cannot build with -fsanitize=thread: {r.stderr.strip()[:200]}"
    r = subprocess.run([str(tmp_path / "t")], capture_output=True, text=True)
    if r.returncode != 0:
        return f"ThreadSanitizer programs do not run here: {r.stderr.strip()[:200]}"
    return None


def test_many_threads_under_thread_sanitizer(tmp_path):
    """The library's sources, the fake driver and the stress program built with -fsanitize=thread:
    any report of ThreadSanitizer fails the test."""
    why = _tsan_available(tmp_path)
    if why:
        pytest.skip(why)
    flags = ["-std=c11", "-D_GNU_SOURCE", "-O1", "-g", "-fsanitize=thread", "-pthread"]
    lib = tmp_path / "libmgpu_tsan.so"
    subprocess.run([CC, *flags, "-fPIC", "-shared", "-fvisibility=hidden",
                    "-I", str(ROOT / "csrc"), "-o", str(lib), *map(str, sorted((ROOT / "csrc").glob("*.c"))),
                    "-ldl"], check=True)
    fake = compile_shared(DRIVERS / "fakecuda.c", tmp_path / "libfake_tsan.so", ["-fsanitize=thread"])
    exe = tmp_path / "stress_tsan"
    subprocess.run([CC, *flags, "-o", str(exe), str(CONC / "stress.c"), str(lib),
                    f"-Wl,-rpath,{tmp_path}"], check=True)
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake), STRESS_NO_CHECK="1",
               FAKECUDA_DEVICES="2", STRESS_DEVICES="2", TSAN_OPTIONS="halt_on_error=0 exitcode=66")
    env.pop("MGPU_CACHED_DISABLE", None)
    p = subprocess.run([str(exe), "16", "40", *BLOBS], env=env, capture_output=True, text=True,
                       timeout=600)
    assert "ThreadSanitizer" not in p.stderr, p.stderr[:4000]
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stdout + p.stderr


# ---- several devices ------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["seq", "threads"])
def test_module_loaded_before_main_runs_on_each_chosen_device(tmp_path, fake_driver_build, mode):
    exe = build_program(tmp_path, "multigpu", [CONC / "multigpu.c", CONC / "conc_llvm22.o"])
    p, st = run_program(exe, ["2", mode, "200"], fake_driver_build, tmp_path,
                        env={"FAKECUDA_DEVICES": "2"})
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stdout + p.stderr
    assert st["driver_module_loads"] == 1
    assert st["function_resolves"] == 2 * 3  # every kernel of the module, once per device
    assert st["driver_stream_creates"] == 2 * 64  # streams (and the cap) are per device
    assert st["errors"] == 0


def test_stock_behaviour_freezes_the_first_device(tmp_path, fake_driver_build):
    exe = build_program(tmp_path, "multigpu", [CONC / "multigpu.c", CONC / "conc_llvm22.o"])
    p, _ = run_program(exe, ["2", "seq", "5"], fake_driver_build, tmp_path,
                       env={"FAKECUDA_DEVICES": "2", "MGPU_CACHED_DISABLE": "1"})
    assert p.returncode == 1 and "device 1: " in p.stdout
    assert "NOT ON THE CHOSEN DEVICE" in p.stdout.split("device 1: ")[1]


# ---- exit --------------------------------------------------------------------------------------

@pytest.mark.parametrize("prog", ["conc", "saxpy"])
def test_unload_in_global_destructor_after_driver_teardown_is_quiet(tmp_path, fake_driver_build,
                                                                    prog):
    """LLVM 22 code unloads its module in a global destructor, after the driver's own exit handler
    has torn it down (emulated: FAKECUDA_DEINIT_AT_EXIT). Exit status 0, nothing on stderr, and no
    driver call at all after the teardown (no pooled object is destroyed at exit)."""
    if prog == "conc":
        exe = conc_harness(tmp_path, 22)
        args = ["join", "200"]
    else:
        exe = build_program(tmp_path, "saxpy22", [DATA / "mlir_harness.c",
                                                  DATA / "mlir" / "saxpy_llvm22.o"], ["-DSAXPY"])
        args = ["20"]
    env = {"FAKECUDA_DEINIT_AT_EXIT": "1"}
    p, _ = run_program(exe, args, fake_driver_build, tmp_path, env=env)
    assert p.returncode == 0 and p.stderr == "", p.stdout + p.stderr
    assert "fakecuda: 0 calls after the driver was torn down" in p.stdout
    # the stock behaviour unloads into the dead driver and reports it (what the fake emulates)
    p, _ = run_program(exe, args, fake_driver_build, tmp_path,
                       env=dict(env, MGPU_CACHED_DISABLE="1"))
    assert p.returncode == 0
    assert "'cuModuleUnload(module)' failed with 'CUDA_ERROR_DEINITIALIZED'" in p.stderr
