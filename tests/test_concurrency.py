# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
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


def _kernel(rt):
    return rt.mgpuModuleGetFunction(rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0), b"k")


def test_stream_cap_reclaims_only_idle_handles(make_runtime):
    rt = make_runtime(env={"MGPU_CACHED_STREAM_HANDLES": "tagged", "MGPU_CACHED_STREAM_CAP": "4"})
    f = _kernel(rt)
    s = [rt.mgpuStreamCreate() for _ in range(4)]
    d = [rt.driver_stream(f, x) for x in s]  # four driver streams: at the cap now
    assert len(set(d)) == 4
    rt.fake.fake_set_busy_launches(1)
    for x in s:
        rt.launch(f, stream=x)  # all four busy
    rt.fake.fake_complete(d[1])  # s[1] has no pending work any more
    n = rt.mgpuStreamCreate()
    dn = rt.driver_stream(f, n)
    assert dn == d[1]  # the one idle driver stream is taken from s[1]...
    assert rt.driver_stream(f, s[1]) not in d  # ...whose next use binds another: no order added
    st = rt.stats()
    assert (st["stream_reclaims"], st["stream_cap_exceeded"], st["live_streams"]) == (1, 1, 5)
    assert rt.fake.count("cuStreamCreate") == 5  # every bound stream busy: past the cap


def test_exp2_a_program_waiting_on_one_handle_never_waits_for_another(make_runtime):
    """Review exp2 on the CPU: above the cap, h1 (an event recorded on it, synchronized) and a new
    handle h2 must never end up on one driver stream while both have work."""
    rt = make_runtime(env={"MGPU_CACHED_STREAM_HANDLES": "tagged", "MGPU_CACHED_STREAM_CAP": "2"})
    f = _kernel(rt)
    other = rt.mgpuStreamCreate()
    rt.driver_stream(f, other)
    h1 = rt.mgpuStreamCreate()
    e = rt.mgpuEventCreate()
    rt.mgpuEventRecord(e, h1)
    rt.mgpuStreamSynchronize(h1)
    h2 = rt.mgpuStreamCreate()
    rt.fake.fake_set_busy_launches(1)
    d1 = rt.driver_stream(f, h1)  # h1's kernel waits for the host
    d2 = rt.driver_stream(f, h2)  # h2's kernel: must not queue behind h1's
    assert d1 != d2


def test_cap_zero_never_reclaims(make_runtime):
    rt = make_runtime(env={"MGPU_CACHED_STREAM_HANDLES": "tagged", "MGPU_CACHED_STREAM_CAP": "0"})
    f = _kernel(rt)
    live = [rt.mgpuStreamCreate() for _ in range(100)]
    drivers = {rt.driver_stream(f, s) for s in live}
    assert len(drivers) == 100 and rt.stats()["stream_reclaims"] == 0


def test_streams_of_another_device_are_never_reclaimed(make_runtime):
    rt = make_runtime(devices=2, env={"MGPU_CACHED_STREAM_HANDLES": "tagged", "MGPU_CACHED_STREAM_CAP": "1"})
    f = _kernel(rt)
    a = rt.mgpuStreamCreate()
    rt.driver_stream(f, a)  # device 0's one driver stream, idle
    rt.mgpuSetDefaultDevice(1)
    b = rt.mgpuStreamCreate()
    assert rt.fake.fake_stream_device(rt.driver_stream(f, b)) == 1


def test_a_thread_that_sets_its_device_leaves_the_inline_answer_of_the_others(make_runtime):
    """The thread's default device is answered inline (context.h) while it is the process's for
    every thread. Once the main thread's calls have published that answer, a thread that calls
    mgpuSetDefaultDevice(1) works on device 1 from its next call on; the main thread and a thread
    that never set one stay on device 0, and the kernel is resolved on each device it runs on."""
    import threading

    rt = make_runtime(devices=2)
    f = _kernel(rt)
    main = rt.mgpuStreamCreate()
    assert rt.fake.fake_stream_device(rt.driver_stream(f, main)) == 0  # the answer published
    seen = {}

    def setter():
        rt.mgpuSetDefaultDevice(1)
        s = rt.mgpuStreamCreate()
        seen["setter"] = rt.fake.fake_stream_device(rt.driver_stream(f, s))
        rt.mgpuStreamSynchronize(s)
        rt.mgpuStreamDestroy(s)

    def other():
        s = rt.mgpuStreamCreate()
        seen["other"] = rt.fake.fake_stream_device(rt.driver_stream(f, s))
        rt.mgpuStreamSynchronize(s)
        rt.mgpuStreamDestroy(s)

    for fn in (setter, other):
        th = threading.Thread(target=fn)
        th.start()
        th.join()
    again = rt.mgpuStreamCreate()
    assert seen == {"setter": 1, "other": 0}
    assert rt.fake.fake_stream_device(rt.driver_stream(f, again)) == 0


def test_pinned_handles_are_never_reclaimed(make_runtime):
    rt = make_runtime(env={"MGPU_CACHED_STREAM_HANDLES": "tagged", "MGPU_CACHED_STREAM_CAP": "1"})
    f = _kernel(rt)
    a = rt.mgpuStreamCreate()
    da = rt.pin(a)
    assert rt.driver_stream(f, rt.mgpuStreamCreate()) != da


@pytest.mark.parametrize("llvm", [19, 22])
def test_million_step_generated_async_loop_keeps_driver_streams_bounded(tmp_path, fake_driver_build,
                                                                         llvm):
    """join_loop: every iteration leaks two streams (joined through events, never destroyed).
    With driver handles (the default) each leaked handle keeps its driver stream, as stock's."""
    exe = conc_harness(tmp_path, llvm)
    n = 1_000_000 if llvm == 22 else 200_000  # 19 code also loads the module per launch
    p, st = run_program(exe, ["join", str(n)], fake_driver_build, tmp_path, timeout=600,
                        env={"MGPU_CACHED_STREAM_HANDLES": "tagged"})  # the cap needs tagged handles
    assert p.returncode == 0 and p.stderr == "", p.stdout + p.stderr
    assert st["stream_creates"] == 3 * n + 1 and st["live_streams"] == 2 * n
    assert st["driver_stream_creates"] == 64  # the default cap, reached and never exceeded
    assert st["stream_cap_exceeded"] == 0 and st["errors"] == 0


def test_generated_async_loop_without_cap_grows(tmp_path, fake_driver_build):
    """The same loop with the cap off: one driver stream per leaked handle (what the cap prevents)."""
    exe = conc_harness(tmp_path, 22)
    p, st = run_program(exe, ["join", "2000"], fake_driver_build, tmp_path,
                        env={"MGPU_CACHED_STREAM_HANDLES": "tagged", "MGPU_CACHED_STREAM_CAP": "0"})
    assert p.returncode == 0, p.stdout + p.stderr
    assert st["driver_stream_creates"] >= 4000 and st["stream_reclaims"] == 0


# ---- handle confusion in generated code ---------------------------------------------------------

@pytest.mark.parametrize("llvm", [19, 22])
def test_token_through_loop_stream_is_synchronised_and_released(tmp_path, fake_driver_build, llvm):
    """token_loop: the generated code passes the loop's *stream* to mgpuEventSynchronize and
    mgpuEventDestroy. It must be synchronised as a stream and go back to the pool."""
    exe = conc_harness(tmp_path, llvm)
    p, st = run_program(exe, ["token", "100"], fake_driver_build, tmp_path)
    assert p.returncode == 0 and p.stderr == "", p.stdout + p.stderr
    assert st["live_streams"] == 0 and st["errors"] == 0
    # driver handles: the harness's stream stays its own; the loop's is destroyed and reused
    # (tagged handles: the synchronized harness stream is unbound, and the two take turns on one)
    assert st["driver_stream_creates"] == 2
    # stock behaviour: the stream goes to cuEventSynchronize / cuEventDestroy, which reject it
    p, _ = run_program(exe, ["token", "100"], fake_driver_build, tmp_path,
                       env={"MGPU_CACHED_DISABLE": "1"})
    assert "'cuEventSynchronize(event)' failed with 'CUDA_ERROR_INVALID_HANDLE'" in p.stderr


@pytest.mark.parametrize("handles", ["driver", "tagged"])
def test_token_through_loop_driver_calls(make_runtime, handles):
    """The call sequence token_loop makes, checked call by call on the fake driver."""
    rt = make_runtime(env={"MGPU_CACHED_STREAM_HANDLES": handles})
    f = rt.mgpuModuleGetFunction(rt.mgpuModuleLoad(blob_buffer(ptx("inc")), 0), b"inc")
    rt.fake.fake_set_busy_launches(1)
    s = rt.mgpuStreamCreate()
    for _ in range(10):
        rt.launch(f, stream=s)
    rt.fake.fake_reset()
    rt.mgpuEventSynchronize(s)
    rt.mgpuEventDestroy(s)
    if handles == "tagged":
        # synchronized through the library just before: given back without a query ("known idle")
        assert rt.fake.log() == ["cuStreamSynchronize"]
        assert rt.stats()["stream_query_skips"] == 1
    else:  # the program may have used the driver stream itself: parked, no driver call; the
        # pool asks the driver at a later synchronisation (pool.c, d_sync_poll): not the one
        # right after the destroy (it leaves the stream just given back alone)
        assert rt.fake.log() == ["cuStreamSynchronize"]
        rt.mgpuStreamSynchronize(None)
        assert "cuStreamQuery" not in rt.fake.log()
        rt.fake.fake_reset()
        rt.mgpuStreamSynchronize(None)
        log = rt.fake.log()
        assert log[0] == "cuStreamQuery" and log.count("cuStreamQuery") == 1
        assert log[-2:] == ["cuStreamSynchronize", "cuCtxPopCurrent"]  # the poll, then the wait
    assert rt.stats()["live_streams"] == 0


# ---- async chains (spin kernels) on the fake: the programs link and make the calls promised ------

@pytest.mark.parametrize("llvm", [19, 22])
def test_spin_pair_uses_two_streams_and_no_per_launch_load(tmp_path, fake_driver_build, llvm):
    exe = conc_harness(tmp_path, llvm)
    p, st = run_program(exe, ["spin", "100"], fake_driver_build, tmp_path)
    assert p.returncode == 0 and p.stderr == "", p.stdout + p.stderr
    # the two chains hold two driver streams at once, the harness's own stream a third (tagged
    # handles: it was synchronized, so unbound, before, and one of the chains reused it)
    assert st["driver_stream_creates"] == 3 and st["driver_module_loads"] == 1
    assert st["launches"] == 2 and st["errors"] == 0


# ---- threads ------------------------------------------------------------------------------------

@pytest.mark.parametrize("chain", [False, True], ids=["default", "chain-replay"])
def test_many_threads_stress(tmp_path, fake_driver_build, chain):
    exe = build_program(tmp_path, "stress", [CONC / "stress.c"])
    env = {"FAKECUDA_DEVICES": "2", "STRESS_DEVICES": "2"}
    if chain:  # every launch deferred, each thread's launches submitting the others' pending ones
        env.update(MGPU_CACHED_GRAPH="1", MGPU_CACHED_CHAIN="1", MGPU_CACHED_STREAM_HANDLES="tagged")
    p, st = run_program(exe, ["16", "300", *BLOBS], fake_driver_build, tmp_path, env=env)
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stdout + p.stderr
    assert (st["chain_deferred"] > 0) == chain
    # one driver load per record and device: the shared buffers' modules on both devices
    assert st["driver_module_loads"] == 3 * (16 + 2)
    assert st["module_misses"] == 3 * 17 and st["module_hits"] == 2 * 3 * 16 * 300 - 3 * 17
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


@pytest.mark.parametrize("chain", [False, True], ids=["default", "chain-replay"])
def test_many_threads_under_thread_sanitizer(tmp_path, chain):
    """The library's sources, the fake driver and the stress program built with -fsanitize=thread:
    any report of ThreadSanitizer fails the test. Also with chain replay on (every launch on a
    stream of ours deferred, sixteen threads' launches flushing each other's)."""
    why = _tsan_available(tmp_path)
    if why:
        pytest.skip(why)
    flags = ["-std=c11", "-D_GNU_SOURCE", "-O1", "-g", "-fsanitize=thread", "-pthread"]
    lib = tmp_path / "libmgpu_tsan.so"
    subprocess.run([CC, *flags, "-fPIC", "-shared", "-fvisibility=hidden",
                    "-I", str(ROOT / "csrc"), "-o", str(lib), *map(str, sorted((ROOT / "csrc").glob("*/*.c"))),
                    "-ldl"], check=True)
    fake = compile_shared(DRIVERS / "fakecuda.c", tmp_path / "libfake_tsan.so", ["-fsanitize=thread"])
    exe = tmp_path / "stress_tsan"
    subprocess.run([CC, *flags, "-o", str(exe), str(CONC / "stress.c"), str(lib),
                    f"-Wl,-rpath,{tmp_path}"], check=True)
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake), STRESS_NO_CHECK="1",
               FAKECUDA_DEVICES="2", STRESS_DEVICES="2", TSAN_OPTIONS="halt_on_error=0 exitcode=66")
    env.pop("MGPU_CACHED_DISABLE", None)
    if chain:
        env.update(MGPU_CACHED_GRAPH="1", MGPU_CACHED_CHAIN="1", MGPU_CACHED_STREAM_HANDLES="tagged")
    p = subprocess.run([str(exe), "16", "40", *BLOBS], env=env, capture_output=True, text=True,
                       timeout=600)
    assert "ThreadSanitizer" not in p.stderr, p.stderr[:4000]
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stdout + p.stderr


# ---- several devices ------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["seq", "threads"])
def test_module_loaded_before_main_runs_on_each_chosen_device(tmp_path, fake_driver_build, mode):
    exe = build_program(tmp_path, "multigpu", [CONC / "multigpu.c", CONC / "conc_llvm22.o"])
    p, st = run_program(exe, ["2", mode, "200"], fake_driver_build, tmp_path,
                        env={"FAKECUDA_DEVICES": "2", "MGPU_CACHED_STREAM_HANDLES": "tagged"})
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stdout + p.stderr
    assert st["driver_module_loads"] == 2  # the module, once in each device's context
    # every kernel of the module on each device; with threads a look-up racing another device's
    # first launch may resolve a kernel there twice (both publish the same function: one is kept)
    assert 2 * 3 <= st["function_resolves"] <= (2 * 3 if mode == "seq" else 2 * 2 * 3)
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


def test_objects_stay_on_the_device_they_were_made_on(tmp_path, fake_driver_build):
    """Trust issue item 7 on the fake: after mgpuSetDefaultDevice(1), the launch on the stream
    made on device 0 runs on device 0 (its stream and function), without an error."""
    exe = build_program(tmp_path, "stay", [CONC / "stay_on_device.c"])
    p, st = run_program(exe, [str(DATA / "kernels.ptx")], fake_driver_build, tmp_path,
                        env={"STAY_NO_CHECK": "1", "FAKECUDA_DEVICES": "2"})
    assert p.returncode == 0 and p.stderr == "" and p.stdout.endswith("ok\n"), p.stdout + p.stderr
    assert st["errors"] == 0 and st["launches"] == 1
