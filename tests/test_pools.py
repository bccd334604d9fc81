# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Stream and event handles and the driver objects behind them: reuse of driver objects, no
sharing between live handles, no inherited pending work, exact detection of destroyed handles."""

import pytest

from conftest import blob_buffer, ptx

HANDLE_TAGS = (0xC5, 0xCE)  # streams, events (pool.c): never a user-space pointer


def _kernel(rt, name="k"):
    return rt.mgpuModuleGetFunction(rt.mgpuModuleLoad(blob_buffer(ptx(name)), 0), name.encode())


def test_handles_are_the_librarys_own_values(make_runtime):
    rt = make_runtime(env={"MGPU_CACHED_STREAM_HANDLES": "tagged"})  # the tagged-handle model
    s, e = rt.mgpuStreamCreate(), rt.mgpuEventCreate()
    assert (s >> 56, e >> 56) == HANDLE_TAGS
    f = _kernel(rt)
    rt.launch(f, stream=s)
    drv = rt.fake.fake_last_stream()
    assert drv != s and rt.fake.fake_stream_flags(drv) == 1  # CU_STREAM_NON_BLOCKING, as stock


def test_sync_launch_pattern_reuses_one_driver_stream(make_runtime):
    rt = make_runtime(env={"MGPU_CACHED_STREAM_HANDLES": "tagged"})  # the tagged-handle model
    f = _kernel(rt)
    handles, driver_streams = set(), set()
    for _ in range(100):
        s = rt.mgpuStreamCreate()
        driver_streams.add(rt.driver_stream(f, s))
        rt.mgpuStreamSynchronize(s)
        rt.mgpuStreamDestroy(s)
        handles.add(s)
    assert len(handles) == 100  # a destroyed handle is never handed out again
    assert len(driver_streams) == 1
    assert rt.fake.counts("cuStreamCreate", "cuStreamDestroy", "cuStreamQuery") == {
        "cuStreamCreate": 1, "cuStreamDestroy": 0, "cuStreamQuery": 0}  # synchronized: known idle
    st = rt.stats()
    assert (st["stream_creates"], st["stream_pool_hits"], st["driver_stream_creates"]) == (100, 99, 1)
    assert (st["live_streams"], st["pooled_streams"], st["stream_query_skips"]) == (0, 1, 100)


def test_live_handles_never_share_a_driver_stream(rt):
    live = [rt.mgpuStreamCreate() for _ in range(8)]
    assert len(set(live)) == 8 and None not in live
    # bound when made, as the stock wrapper makes its stream in mgpuStreamCreate
    assert rt.stats()["live_streams"] == 8 and rt.fake.count("cuStreamCreate") == 8
    f = _kernel(rt)
    drivers = [rt.driver_stream(f, s) for s in live]
    assert len(set(drivers)) == 8  # live handles never share a driver stream
    assert rt.fake.count("cuStreamCreate") == 8


def test_busy_driver_stream_is_not_reused_until_its_work_is_done(rt):
    f = _kernel(rt)
    rt.fake.fake_set_busy_launches(1)
    s1 = rt.mgpuStreamCreate()
    d1 = rt.driver_stream(f, s1)
    rt.mgpuStreamDestroy(s1)  # destroyed with work still queued (legal)
    s2 = rt.mgpuStreamCreate()
    d2 = rt.driver_stream(f, s2)
    assert d2 != d1  # a new owner must not wait behind the old work
    rt.fake.fake_complete(d1)
    rt.mgpuStreamSynchronize(None)  # a synchronisation polls the parked streams (pool.c)
    s3 = rt.mgpuStreamCreate()
    assert rt.driver_stream(f, s3) == d1  # finished now: reused
    assert rt.fake.count("cuStreamCreate") == 2


def test_destroyed_handles_are_reported_as_the_driver_reports_them(make_runtime, capfd):
    """A stale handle is detected exactly, even once its slot serves another handle, and nothing
    is done to the new owner's objects (review R12)."""
    rt = make_runtime(env={"MGPU_CACHED_STREAM_HANDLES": "tagged"})  # the tagged-handle model
    f = _kernel(rt)
    s = rt.mgpuStreamCreate()
    rt.mgpuStreamDestroy(s)
    rt.mgpuStreamDestroy(s)
    assert "'cuStreamDestroy(stream)' failed with 'CUDA_ERROR_INVALID_HANDLE'" in capfd.readouterr().err
    a, b = rt.mgpuStreamCreate(), rt.mgpuStreamCreate()
    assert len({a, b, s}) == 3
    rt.launch(f, stream=s)
    rt.mgpuStreamSynchronize(s)
    err = capfd.readouterr().err
    assert "'cuLaunchKernel' failed with 'CUDA_ERROR_INVALID_HANDLE'" in err
    assert "'cuStreamSynchronize(stream)' failed with 'CUDA_ERROR_INVALID_HANDLE'" in err
    e1 = rt.mgpuEventCreate()
    rt.mgpuEventDestroy(e1)
    e2 = rt.mgpuEventCreate()  # another owner; its driver event may be e1's old one
    assert e2 != e1
    n_record = rt.fake.count("cuEventRecord")
    rt.mgpuEventRecord(e1, a)
    rt.mgpuEventDestroy(e1)
    err = capfd.readouterr().err
    assert err.count("CUDA_ERROR_INVALID_HANDLE") == 2, err
    assert "'cuEventRecord(event, stream)' failed" in err and "'cuEventDestroy(event)' failed" in err
    assert rt.fake.count("cuEventRecord") == n_record  # nothing reached the driver
    assert rt.mgpuEventCreate() not in (e1, e2)  # e2 is still live: not handed out again
    rt.mgpuEventDestroy(e2)
    assert "failed" not in capfd.readouterr().err  # the owner's own destroy works


def test_foreign_stream_is_passed_to_the_driver(rt, capfd):
    rt.mgpuStreamSynchronize(None)  # the NULL stream: fine, in the device's context
    bogus = 0xdead0000
    rt.mgpuStreamDestroy(bogus)  # not ours: the driver decides, as with the stock wrapper
    assert rt.fake.count("cuStreamDestroy") == 1
    assert "'cuStreamDestroy(stream)' failed with 'CUDA_ERROR_INVALID_HANDLE'" in capfd.readouterr().err


def test_events_are_pooled_and_wait_for_completion(rt):
    f = _kernel(rt)
    s = rt.mgpuStreamCreate()
    for _ in range(50):
        e = rt.mgpuEventCreate()
        rt.mgpuEventRecord(e, s)
        rt.mgpuEventSynchronize(e)
        rt.mgpuEventDestroy(e)
    # two take turns: a destroyed one is parked until the next synchronisation's poll (pool.c)
    assert rt.fake.count("cuEventCreate") == 2
    rt.fake.fake_set_busy_launches(1)
    rt.launch(f, stream=s)
    e1 = rt.mgpuEventCreate()
    rt.mgpuEventRecord(e1, s)
    rt.mgpuEventDestroy(e1)  # its recorded work is still pending: its driver event drains
    e2 = rt.mgpuEventCreate()
    assert e2 != e1  # never the busy one
    n = rt.fake.count("cuEventCreate")
    d = rt.fake.fake_last_stream()
    rt.fake.fake_complete(d)
    rt.mgpuEventDestroy(e2)
    for _ in range(2):  # each synchronisation polls two parked objects: all three idle now
        rt.mgpuStreamSynchronize(None)
    assert e1 in (rt.mgpuEventCreate(), rt.mgpuEventCreate(), rt.mgpuEventCreate())
    assert rt.fake.count("cuEventCreate") == n  # both reused once idle


def test_stream_passed_as_event_is_synchronised_and_released(rt):
    """A token carried through a loop reaches mgpuEventSynchronize/Destroy as a stream."""
    f = _kernel(rt)
    rt.fake.fake_set_busy_launches(1)
    s = rt.mgpuStreamCreate()
    d = rt.driver_stream(f, s)
    rt.mgpuEventSynchronize(s)
    rt.mgpuEventDestroy(s)
    assert rt.fake.counts("cuStreamSynchronize", "cuEventSynchronize", "cuEventDestroy") == {
        "cuStreamSynchronize": 1, "cuEventSynchronize": 0, "cuEventDestroy": 0}
    assert rt.stats()["live_streams"] == 0
    rt.mgpuStreamSynchronize(None)  # polls the parked stream: idle, so back in the pool
    assert rt.driver_stream(f, rt.mgpuStreamCreate()) == d


def test_stream_passed_as_event_to_a_wait_joins_that_stream(rt):
    """mgpuStreamWaitEvent(s, other_stream): the stock wrapper passes a stream to
    cuStreamWaitEvent (rejected); here s waits for the other stream's work so far."""
    f = _kernel(rt)
    a, b = rt.mgpuStreamCreate(), rt.mgpuStreamCreate()
    da = rt.driver_stream(f, a)
    rt.fake.fake_reset()
    rt.mgpuStreamWaitEvent(b, a)
    assert rt.fake.counts("cuEventRecord", "cuStreamWaitEvent") == {"cuEventRecord": 1,
                                                                    "cuStreamWaitEvent": 1}
    assert rt.stats()["errors"] == 0 and rt.fake.fake_last_stream() == da


def test_streams_stay_on_the_device_they_were_made_on(make_runtime):
    """Review item 7: a stream made before mgpuSetDefaultDevice(1) keeps working on device 0."""
    rt = make_runtime(devices=2)
    f = _kernel(rt)
    s0 = rt.mgpuStreamCreate()
    rt.mgpuSetDefaultDevice(1)
    s1 = rt.mgpuStreamCreate()
    d0, d1 = rt.driver_stream(f, s0), rt.driver_stream(f, s1)
    assert (rt.fake.fake_stream_device(d0), rt.fake.fake_stream_device(d1)) == (0, 1)
    assert rt.fake.fake_function_device(rt.fake.fake_last_function()) == 1
    rt.launch(f, stream=s0)  # default device is 1, the stream's is 0: the kernel runs on 0
    assert rt.fake.fake_function_device(rt.fake.fake_last_function()) == 0
    rt.mgpuStreamSynchronize(s0)
    rt.mgpuStreamDestroy(s0)
    s1b = rt.mgpuStreamCreate()  # device 1: device 0's pooled stream must not be handed out
    assert rt.fake.fake_stream_device(rt.driver_stream(f, s1b)) == 1
    assert rt.stats()["errors"] == 0


def test_event_follows_the_stream_it_is_recorded_on(make_runtime):
    rt = make_runtime(devices=2)
    e = rt.mgpuEventCreate()  # made on device 0
    rt.mgpuSetDefaultDevice(1)
    s1 = rt.mgpuStreamCreate()
    rt.mgpuEventRecord(e, s1)  # recorded on a device-1 stream: needs a device-1 driver event
    rt.mgpuStreamWaitEvent(rt.mgpuStreamCreate(), e)
    rt.mgpuEventSynchronize(e)
    assert rt.stats()["errors"] == 0
    assert rt.fake.count("cuEventCreate") == 2


def test_pinned_handle_keeps_its_driver_stream(rt):
    f = _kernel(rt)
    s = rt.mgpuStreamCreate()
    d = rt.pin(s)
    assert d and d >> 56 == 0 and rt.fake.fake_stream_flags(d) == 1
    rt.mgpuStreamSynchronize(s)  # not unbound: the program may use d directly
    assert rt.driver_stream(f, s) == d
    assert rt.pin(0x1234) == 0x1234  # not ours: unchanged
