# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""MGPU_CACHED_DEVICE=local-rank|N: one process per GPU under a launcher (torchrun, mpirun, srun).
The default device of every thread that never called mgpuSetDefaultDevice comes from the
launcher's local rank modulo the device count, already for the module load LLVM >= 21 code makes
in a global constructor; against the fake driver with several devices (FAKECUDA_DEVICES)."""

import os
import subprocess

import pytest

import mgpu_cached
from conftest import CC, DATA, blob_buffer, ptx

RANK_VARS = ["LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID",
             "MV2_COMM_WORLD_LOCAL_RANK", "PMI_LOCAL_RANK"]


@pytest.fixture(autouse=True)
def no_launcher(monkeypatch):
    for v in RANK_VARS + ["MGPU_CACHED_DEVICE"]:
        monkeypatch.delenv(v, raising=False)


def work_device(rt):
    """Load a module, launch on a new stream; the device of the stream and of the function."""
    m = rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0)
    f = rt.mgpuModuleGetFunction(m, b"k")
    s = rt.mgpuStreamCreate()
    rt.launch(f, stream=s)
    rt.mgpuStreamSynchronize(s)
    dev = (rt.fake.fake_stream_device(s), rt.fake.fake_function_device(rt.fake.fake_last_function()))
    rt.mgpuStreamDestroy(s)
    return dev


@pytest.mark.parametrize("var,rank,want", [("LOCAL_RANK", "6", 2),
                                           ("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1),
                                           ("SLURM_LOCALID", "3", 3), ("MPI_LOCALRANKID", "4", 0)])
@pytest.mark.parametrize("disable", [False, True])
def test_local_rank_modulo_device_count(make_runtime, var, rank, want, disable):
    rt = make_runtime(devices=4, disable=disable,
                      env={"MGPU_CACHED_DEVICE": "local-rank", var: rank})
    assert work_device(rt) == (want, want)


def test_torchrun_variable_wins_and_set_default_device_still_overrides(make_runtime):
    rt = make_runtime(devices=2, env={"MGPU_CACHED_DEVICE": "local-rank", "LOCAL_RANK": "1",
                                      "SLURM_LOCALID": "0"})
    assert work_device(rt) == (1, 1)
    rt.mgpuSetDefaultDevice(0)
    assert work_device(rt) == (0, 0)


def test_other_threads_get_the_process_device(make_runtime):
    import threading
    rt = make_runtime(devices=3, env={"MGPU_CACHED_DEVICE": "local-rank", "LOCAL_RANK": "2"})
    out = []
    t = threading.Thread(target=lambda: out.append(work_device(rt)))
    t.start()
    t.join()
    assert out == [(2, 2)]


def test_a_number_and_no_switch(make_runtime, monkeypatch):
    assert work_device(make_runtime(devices=4, env={"MGPU_CACHED_DEVICE": "3"})) == (3, 3)
    os.environ.pop("MGPU_CACHED_DEVICE")
    rt = make_runtime(devices=4, env={"LOCAL_RANK": "2"})  # no switch: rank ignored
    assert work_device(rt) == (0, 0)
    assert rt.fake.count("cuDeviceGetCount") <= 1


def test_bad_rank_falls_back_to_device_0_with_a_message(make_runtime, capfd):
    rt = make_runtime(devices=2, env={"MGPU_CACHED_DEVICE": "local-rank", "LOCAL_RANK": "x"})
    capfd.readouterr()
    assert work_device(rt) == (0, 0)
    assert "LOCAL_RANK='x' is not a rank" in capfd.readouterr().err


@pytest.mark.parametrize("disable", [False, True])
def test_llvm22_module_loaded_before_main_lands_on_the_rank_device(tmp_path, fake_driver_build,
                                                                   disable):
    if CC is None:
        pytest.skip("no C compiler")
    exe = tmp_path / "probe"
    subprocess.run([CC, "-std=c11", "-o", str(exe), str(DATA / "device_probe.c"),
                    str(DATA / "mlir" / "empty_loop_llvm22.o"), *mgpu_cached.ldflags().split(),
                    "-ldl"], check=True)
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake_driver_build), FAKECUDA_DEVICES="2",
               MGPU_CACHED_DEVICE="local-rank", LOCAL_RANK="1")
    env.pop("MGPU_CACHED_DISABLE", None)
    if disable:
        env["MGPU_CACHED_DISABLE"] = "1"
    p = subprocess.run([str(exe), "3"], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "device stream=1 function=1", p.stdout + p.stderr


def test_a_thread_that_sets_its_device_leaves_the_others_on_the_process_device(make_runtime):
    """Until some thread calls mgpuSetDefaultDevice, no thread looks up its own default device
    (context.c: g_any_thread_device); once one does, it gets its own device and the others keep
    the process device, before and after."""
    import threading
    rt = make_runtime(devices=3, env={"MGPU_CACHED_DEVICE": "2"})
    assert work_device(rt) == (2, 2)
    out = []

    def setter():
        rt.mgpuSetDefaultDevice(1)
        out.append(work_device(rt))

    t = threading.Thread(target=setter)
    t.start()
    t.join()
    assert out == [(1, 1)]
    assert work_device(rt) == (2, 2)  # this thread never set one
    other = []
    t = threading.Thread(target=lambda: other.append(work_device(rt)))
    t.start()
    t.join()
    assert other == [(2, 2)]
    rt.mgpuSetDefaultDevice(0)
    assert work_device(rt) == (0, 0)
