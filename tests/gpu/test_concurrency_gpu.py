# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Concurrency (issue 4) on real GPUs: kernels on two async chains really overlap (they wait for
each other), a token carried through a loop is synchronised, a generated async loop keeps its
driver streams bounded, many threads get every result right, and with two or more GPUs each
thread's work runs on the device it chose. Results are computed on the GPU and checked by the C
programs in tests/data/conc/; exit status 0 and an empty stderr are required throughout (the LLVM
22 programs unload their module in a global destructor)."""

import json
import os
import subprocess

import pytest

import mgpu_cached
from conftest import CC, DATA
from gpu_support import cu, gpu, ok  # noqa: F401 (fixtures)

if cu is None:
    pytest.skip("GPU tests need cuda-python (pip install cuda-python) and an NVIDIA GPU",
                allow_module_level=True)

CONC = DATA / "conc"
BLOBS = [str(DATA / f"kernels.{k}") for k in ("ptx", "fatbin", "cubin")]
SPIN_LIMIT = 1 << 22  # polls before a spinning kernel gives up (a few seconds)


def build(tmp_path, name, sources, extra=()):
    if CC is None:
        pytest.skip("no C compiler")
    exe = tmp_path / name
    subprocess.run([CC, "-std=c11", "-O1", "-pthread", "-o", str(exe), *map(str, sources), *extra,
                    *mgpu_cached.ldflags_list(), "-ldl"], check=True)
    return exe


def run(exe, args, tmp_path, env=None, timeout=300):
    stats = tmp_path / f"stats_{exe.name}.json"
    e = dict(os.environ, MGPU_CACHED_STATS_FILE=str(stats))
    for k in ("MGPU_CACHED_CUDA_DRIVER", "MGPU_CACHED_DISABLE", "MGPU_CACHED_STREAM_CAP"):
        e.pop(k, None)
    e.update(env or {})
    p = subprocess.run([str(exe), *map(str, args)], env=e, capture_output=True, text=True,
                       timeout=timeout)
    st = json.loads(stats.read_text())["stats"] if stats.exists() else {}
    return p, st


def harness(tmp_path, llvm):
    return build(tmp_path, f"conc{llvm}", [CONC / "conc_harness.c", CONC / f"conc_llvm{llvm}.o"])


@pytest.mark.parametrize("llvm", [19, 22])
def test_kernels_on_two_async_chains_wait_for_each_other(gpu, tmp_path, llvm):
    """Each kernel sets its flag and spins until it sees the other's: this finishes without a
    timeout only if both kernels run at the same time."""
    p, st = run(harness(tmp_path, llvm), ["spin", SPIN_LIMIT], tmp_path)
    assert p.returncode == 0 and p.stderr == "", p.stdout + p.stderr
    polls = [int(x) for x in p.stdout.split()[1:3]]
    assert max(polls) < SPIN_LIMIT
    assert st["driver_module_loads"] == 1 and st["launches"] == 2


@pytest.mark.parametrize("llvm", [19, 22])
def test_token_through_loop_is_synchronised_on_gpu(gpu, tmp_path, llvm):
    """token_loop: n increments queued on the loop's stream; the generated code waits for them
    through mgpuEventSynchronize(stream). The read-back must see all n."""
    p, st = run(harness(tmp_path, llvm), ["token", 20000], tmp_path)
    assert p.returncode == 0 and p.stderr == "", p.stdout + p.stderr
    assert p.stdout.split()[1] == "20000"
    # driver handles: a destroyed stream is reused once a later synchronisation found it idle
    # (streams/pool.c), so the iterations take turns on two or three driver streams
    assert st["live_streams"] == 0 and st["driver_stream_creates"] <= 3 and st["errors"] == 0


@pytest.mark.parametrize("llvm", [19, 22])
def test_generated_async_loop_bounded_streams_and_right_results(gpu, tmp_path, llvm, monkeypatch):
    # the stream cap bounds leaked handles only with tagged handles (driver handles leak driver
    # streams as stock does)
    monkeypatch.setenv("MGPU_CACHED_STREAM_HANDLES", "tagged")
    n = 50000
    p, st = run(harness(tmp_path, llvm), ["join", n], tmp_path)
    assert p.returncode == 0 and p.stderr == "", p.stdout + p.stderr  # values checked inside
    assert st["live_streams"] == 2 * n  # handles the generated code never gives back
    # idle leaked handles give their driver streams back at the cap (pool.h)
    assert st["driver_stream_creates"] <= 64 and st["stream_cap_exceeded"] == 0


def test_many_threads_every_result_checked(gpu, tmp_path):
    exe = build(tmp_path, "stress", [CONC / "stress.c"])
    p, st = run(exe, [16, 200, *BLOBS], tmp_path)
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stdout + p.stderr
    assert p.stderr == ""
    assert st["driver_module_loads"] == 3 * 17 and st["launches"] == 2 * 16 * 200


def _device_count():
    return ok(cu.cuDeviceGetCount())


@pytest.mark.parametrize("mode", ["seq", "threads"])
def test_module_loaded_before_main_runs_on_each_chosen_gpu(gpu, tmp_path, mode):
    n = _device_count()
    if n < 2:
        pytest.skip(f"needs at least 2 GPUs (this machine has {n})")
    exe = build(tmp_path, "multigpu", [CONC / "multigpu.c", CONC / "conc_llvm22.o"])
    # join_loop leaks two stream handles per iteration (the generated code never destroys them);
    # the stream cap bounds their driver streams with tagged handles only (driver handles keep
    # one each, as stock's): as its CPU twin in tests/test_concurrency.py
    p, st = run(exe, [n, mode, 2000], tmp_path, env={"MGPU_CACHED_STREAM_HANDLES": "tagged"})
    assert p.returncode == 0 and p.stderr == "" and p.stdout.strip().endswith("ok"), \
        p.stdout + p.stderr
    for d in range(n):  # the buffer each device's kernels wrote lives on that device
        assert f"device {d}: values" in p.stdout and f"buffer on device {d};" in p.stdout
    # the module cache loads the image once per device (a module of the driver's module API lives
    # in one context) and resolves each kernel at its first launch there: multigpu.c launches 3 of
    # conc.mlir's 5 kernels (fill, inc, sum), each resolved once per device
    assert st["driver_module_loads"] == n and st["function_resolves"] == 3 * n
    assert st["driver_stream_creates"] <= 64 * n and st["stream_cap_exceeded"] == 0


def test_stock_behaviour_runs_on_the_first_gpu_only(gpu, tmp_path):
    n = _device_count()
    if n < 2:
        pytest.skip(f"needs at least 2 GPUs (this machine has {n})")
    exe = build(tmp_path, "multigpu", [CONC / "multigpu.c", CONC / "conc_llvm22.o"])
    p, _ = run(exe, [n, "seq", 10], tmp_path, env={"MGPU_CACHED_DISABLE": "1"})
    assert p.returncode != 0, p.stdout + p.stderr  # device 1's work is not on device 1


@pytest.mark.parametrize("disable", ["0", "1"])
def test_objects_stay_on_the_device_they_were_made_on(gpu, tmp_path, disable):
    """Trust issue item 7: a module, stream, event and two buffers made on device 0, then
    mgpuSetDefaultDevice(1), then saxpy on the device-0 stream: right results, no error (stock:
    everything stays on the first device)."""
    n = _device_count()
    if n < 2:
        pytest.skip(f"needs at least 2 GPUs (this machine has {n})")
    exe = build(tmp_path, "stay", [CONC / "stay_on_device.c"])
    p, st = run(exe, [DATA / "kernels.fatbin"], tmp_path, env={"MGPU_CACHED_DISABLE": disable})
    assert p.returncode == 0 and p.stderr == "" and p.stdout.endswith("wrong 0 of 1024\nok\n"), \
        p.stdout + p.stderr
