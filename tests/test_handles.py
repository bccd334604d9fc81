# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Issue 19, items 4 and 6: stream and event handles are driver objects by default (as stock's),
and the pool neither spins on another thread's wait, nor grows without bound, nor reorders a
stream that one thread synchronizes while another launches on it; the pool's own queries never
break another thread's global-mode stream capture (fake_capture.h models capture modes).
MGPU_CACHED_STREAM_HANDLES=tagged keeps the library's own handles (opt-in)."""

import ctypes
import threading
import time

import pytest

from conftest import GRAPH_EAGER, blob_buffer, library_handle, ptx

vp = ctypes.c_void_p


def _kernel(rt):
    return rt.mgpuModuleGetFunction(rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0), b"k")


def _fn(rt, name, res, *args):
    f = getattr(rt.fake.lib, name)
    f.restype, f.argtypes = res, list(args)
    return f


@pytest.mark.parametrize("disable", [False, True])
def test_handles_are_driver_objects(make_runtime, disable):
    """G6: a handle from mgpuStreamCreate / mgpuEventCreate works with the driver API."""
    rt = make_runtime(disable=disable)
    s, e = rt.mgpuStreamCreate(), rt.mgpuEventCreate()
    assert not library_handle(s) and not library_handle(e)
    assert _fn(rt, "cuStreamQuery", ctypes.c_int, vp)(s) == 0
    assert _fn(rt, "cuEventQuery", ctypes.c_int, vp)(e) == 0
    f = _kernel(rt)
    rt.launch(f, stream=s)
    assert rt.fake.fake_last_stream() == s  # the kernel ran on the handle itself
    rt.mgpuEventRecord(e, s)
    rt.mgpuStreamSynchronize(s)
    rt.mgpuEventDestroy(e)
    rt.mgpuStreamDestroy(s)
    assert rt.stats()["errors"] == 0


def test_tagged_handles_are_opt_in(make_runtime):
    rt = make_runtime(env={"MGPU_CACHED_STREAM_HANDLES": "tagged"})
    s, e = rt.mgpuStreamCreate(), rt.mgpuEventCreate()
    assert library_handle(s) and library_handle(e)
    rt.mgpuStreamDestroy(s)
    rt.mgpuEventDestroy(e)


def test_streams_and_events_are_pooled_and_a_destroyed_handle_is_reported(rt):
    s = rt.mgpuStreamCreate()
    rt.mgpuStreamDestroy(s)  # parked: reused once a synchronisation's poll finds it idle
    rt.mgpuStreamSynchronize(None)
    assert rt.mgpuStreamCreate() == s  # idle: reused, no new driver stream
    assert rt.fake.count("cuStreamCreate") == 1
    e = rt.mgpuEventCreate()
    rt.mgpuEventDestroy(e)
    rt.mgpuEventDestroy(e)  # destroyed twice: reported as the driver reports a dead handle
    assert rt.stats()["errors"] == 1
    rt.mgpuStreamSynchronize(None)
    assert rt.mgpuEventCreate() == e
    assert rt.fake.count("cuEventCreate") == 1
    assert rt.fake.count("cuStreamDestroy") == rt.fake.count("cuEventDestroy") == 0


def test_a_busy_destroyed_stream_is_reused_only_once_idle(rt):
    f = _kernel(rt)
    rt.fake.fake_set_busy_launches(1)
    s = rt.mgpuStreamCreate()
    rt.launch(f, stream=s)
    rt.mgpuStreamDestroy(s)  # its kernel still runs
    t = rt.mgpuStreamCreate()
    assert t != s
    rt.fake.fake_complete(s)
    rt.mgpuStreamDestroy(t)
    rt.mgpuStreamSynchronize(None)  # polls the parked streams: both idle now
    assert s in (rt.mgpuStreamCreate(), rt.mgpuStreamCreate())


def test_event_record_on_another_device_never_waits_for_a_waiter(make_runtime):
    """R26: thread A waits for event E (recorded on device 0 behind a kernel that waits for the
    host); thread B records E on a device-1 stream: B returns while A still waits."""
    rt = make_runtime(devices=2)
    f = _kernel(rt)
    s0 = rt.mgpuStreamCreate()
    ev = rt.mgpuEventCreate()
    rt.fake.fake_set_busy_launches(1)
    rt.fake.fake_hold(1)
    rt.launch(f, stream=s0)
    rt.mgpuEventRecord(ev, s0)
    a = threading.Thread(target=lambda: rt.mgpuEventSynchronize(ev))
    a.start()
    while rt.fake.fake_blocked() < 1:
        time.sleep(0.001)
    rt.mgpuSetDefaultDevice(1)
    s1 = rt.mgpuStreamCreate()
    assert rt.fake.fake_stream_device(s1) == 1
    released = []

    def watchdog():  # without the fix B would wait until A's wait ends: end it after 5 s
        for _ in range(500):
            if released:
                return
            time.sleep(0.01)
        released.append("watchdog")
        rt.fake.fake_hold(0)
    w = threading.Thread(target=watchdog)
    w.start()
    rt.mgpuEventRecord(ev, s1)
    still_waiting = rt.fake.fake_blocked() >= 1 and not released
    released.append("B")
    rt.fake.fake_hold(0)
    a.join()
    w.join()
    assert still_waiting, "mgpuEventRecord waited for another thread's mgpuEventSynchronize"
    assert rt.stats()["errors"] == 0


def test_events_whose_records_never_complete_do_not_grow_the_pool(rt):
    """R25: 4 destroyed events stuck behind a kernel that never ends; then every step makes,
    records and destroys an event: driver events stay bounded (stock: create + destroy, net 0)."""
    f = _kernel(rt)
    rt.fake.fake_set_busy_launches(1)
    stuck = rt.mgpuStreamCreate()
    rt.launch(f, stream=stuck)  # never completes
    for _ in range(4):
        e = rt.mgpuEventCreate()
        rt.mgpuEventRecord(e, stuck)
        rt.mgpuEventDestroy(e)
    s = rt.mgpuStreamCreate()
    before = rt.fake.count("cuEventCreate")
    for _ in range(300):
        e = rt.mgpuEventCreate()
        rt.launch(f, stream=s)
        rt.mgpuEventRecord(e, s)
        rt.mgpuEventDestroy(e)
        rt.mgpuStreamSynchronize(s)
    assert rt.fake.count("cuEventCreate") - before <= 4


def test_a_synchronized_stream_keeps_its_launches_in_order(rt):
    """R27: thread A synchronizes S while thread B launches K1 then K2 on S: both run on the same
    driver stream, S itself (a handle is its driver stream for its whole life)."""
    f = _kernel(rt)
    rt.fake.fake_set_busy_launches(1)
    s = rt.mgpuStreamCreate()
    used = set()
    stop = []
    a = threading.Thread(target=lambda: [rt.mgpuStreamSynchronize(s) for _ in iter(lambda: bool(stop), True)])
    a.start()
    for _ in range(200):
        rt.launch(f, stream=s)
        used.add(rt.fake.fake_last_stream())
    stop.append(1)
    a.join()
    assert used == {s}


def test_pool_queries_keep_another_threads_global_capture(make_runtime):
    """Item 2 (pool part): the pool's own cuStreamQuery / cuEventQuery run in relaxed capture
    mode, so a global-mode capture by another thread stays valid; and a launch on a stream the
    program captures is captured, as stock's. (The graph path's own driver calls are another
    part of item 2: off here.)"""
    rt = make_runtime(env={"MGPU_CACHED_GRAPH": "0"})
    f = _kernel(rt)
    begin = _fn(rt, "cuStreamBeginCapture_v2", ctypes.c_int, vp, ctypes.c_int)
    end = _fn(rt, "cuStreamEndCapture", ctypes.c_int, vp, ctypes.POINTER(vp))
    cs = rt.mgpuStreamCreate()
    started, go, result = threading.Event(), threading.Event(), []

    def capturer():
        result.append(begin(cs, 0))  # global mode
        started.set()
        go.wait()
        for _ in range(10):
            rt.launch(f, stream=cs)
        g = vp()
        result.append(end(cs, ctypes.byref(g)))
    t = threading.Thread(target=capturer)
    t.start()
    started.wait()
    rt.fake.fake_set_busy_launches(1)
    for _ in range(5):  # pool upkeep while the capture runs: queries of given-back objects
        s, e = rt.mgpuStreamCreate(), rt.mgpuEventCreate()
        rt.launch(f, stream=s)
        rt.mgpuEventRecord(e, s)
        rt.mgpuEventDestroy(e)
        rt.mgpuStreamDestroy(s)
    go.set()
    t.join()
    assert rt.fake.count("cuStreamQuery") + rt.fake.count("cuEventQuery") > 0
    assert _fn(rt, "fake_capture_violations", ctypes.c_long)() == 0
    assert result == [0, 0]  # began, and ended valid


def test_launches_on_a_capturing_stream_are_captured(make_runtime):
    """Once the graph path is open (eager thresholds: an exec exists before the capture), a launch
    on a capturing stream asks the stream (cuStreamIsCapturing) and is captured, not replayed."""
    rt = make_runtime(env=GRAPH_EAGER)
    f = _kernel(rt)
    begin = _fn(rt, "cuStreamBeginCapture_v2", ctypes.c_int, vp, ctypes.c_int)
    nodes = _fn(rt, "fake_capture_nodes", ctypes.c_long, vp)
    cs = rt.mgpuStreamCreate()
    for _ in range(10):  # warm: the graph path would take later launches
        rt.launch(f, stream=cs)
    rt.mgpuStreamSynchronize(cs)
    launches = rt.fake.launches()
    assert begin(cs, 2) == 0  # relaxed: only this stream's work matters here
    for _ in range(10):
        rt.launch(f, stream=cs)
    assert nodes(cs) == 10
    assert rt.fake.launches() == launches + 10
    assert rt.fake.count("cuStreamIsCapturing") >= 10
    assert rt.stats()["errors"] == 0
