"""Stream and event pools: reuse, no sharing between live handles, no inherited pending work."""

from conftest import blob_buffer, ptx


def test_sync_launch_pattern_reuses_one_stream(rt):
    f = rt.mgpuModuleGetFunction(rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0), b"k")
    handles = set()
    for _ in range(100):
        s = rt.mgpuStreamCreate()
        rt.launch(f, stream=s)
        rt.mgpuStreamSynchronize(s)
        rt.mgpuStreamDestroy(s)
        handles.add(s)
    assert len(handles) == 1
    assert rt.fake.counts("cuStreamCreate", "cuStreamDestroy", "cuStreamQuery") == {
        "cuStreamCreate": 1, "cuStreamDestroy": 0, "cuStreamQuery": 0}  # synchronized: known idle
    s = handles.pop()
    assert rt.fake.fake_stream_flags(s) == 1  # CU_STREAM_NON_BLOCKING, as the stock wrapper
    st = rt.stats()
    assert (st["stream_creates"], st["stream_pool_hits"], st["driver_stream_creates"]) == (100, 99, 1)
    assert (st["live_streams"], st["pooled_streams"]) == (0, 1)


def test_live_streams_are_never_shared(rt):
    live = [rt.mgpuStreamCreate() for _ in range(8)]
    assert len(set(live)) == 8 and None not in live
    assert rt.stats()["live_streams"] == 8
    for s in live:
        rt.mgpuStreamDestroy(s)
    again = [rt.mgpuStreamCreate() for _ in range(8)]
    assert set(again) == set(live)
    assert rt.fake.count("cuStreamCreate") == 8


def test_busy_stream_is_not_reused_until_its_work_is_done(rt):
    f = rt.mgpuModuleGetFunction(rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0), b"k")
    rt.fake.fake_set_busy_launches(1)
    s1 = rt.mgpuStreamCreate()
    rt.launch(f, stream=s1)
    rt.mgpuStreamDestroy(s1)  # destroyed with work still queued (legal)
    s2 = rt.mgpuStreamCreate()
    assert s2 != s1  # a new owner must not wait behind the old work
    rt.fake.fake_complete(s1)
    s3 = rt.mgpuStreamCreate()
    assert s3 == s1  # finished now: reused
    assert rt.fake.count("cuStreamCreate") == 2


def test_double_destroy_is_reported_and_harmless(rt, capfd):
    s = rt.mgpuStreamCreate()
    rt.mgpuStreamDestroy(s)
    rt.mgpuStreamDestroy(s)
    err = capfd.readouterr().err
    assert "'mgpuStreamDestroy' failed with 'MGPU_CACHED_DOUBLE_DESTROY'" in err
    a, b = rt.mgpuStreamCreate(), rt.mgpuStreamCreate()
    assert a != b  # the pool was not corrupted into handing one stream out twice
    e = rt.mgpuEventCreate()
    rt.mgpuEventDestroy(e)
    rt.mgpuEventDestroy(e)
    assert "'mgpuEventDestroy' failed with 'MGPU_CACHED_DOUBLE_DESTROY'" in capfd.readouterr().err
    assert rt.mgpuEventCreate() != rt.mgpuEventCreate()


def test_foreign_stream_is_passed_to_the_driver(rt, capfd):
    rt.mgpuStreamSynchronize(None)  # the NULL stream: fine, in the device's context
    bogus = 0xdead0000
    rt.mgpuStreamDestroy(bogus)  # not ours: the driver decides, as with the stock wrapper
    assert rt.fake.count("cuStreamDestroy") == 1
    assert "'cuStreamDestroy(stream)' failed with 'CUDA_ERROR_INVALID_HANDLE'" in capfd.readouterr().err


def test_events_are_pooled_and_wait_for_completion(rt):
    f = rt.mgpuModuleGetFunction(rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0), b"k")
    s = rt.mgpuStreamCreate()
    seen = set()
    for _ in range(50):
        e = rt.mgpuEventCreate()
        rt.mgpuEventRecord(e, s)
        rt.mgpuEventSynchronize(e)
        rt.mgpuEventDestroy(e)
        seen.add(e)
    assert len(seen) == 1 and rt.fake.count("cuEventCreate") == 1
    rt.fake.fake_set_busy_launches(1)
    rt.launch(f, stream=s)
    e1 = rt.mgpuEventCreate()
    rt.mgpuEventRecord(e1, s)
    rt.mgpuEventDestroy(e1)  # its recorded work is still pending
    e2 = rt.mgpuEventCreate()
    assert e2 != e1
    rt.fake.fake_complete(s)
    rt.mgpuEventDestroy(e2)
    assert {rt.mgpuEventCreate(), rt.mgpuEventCreate()} == {e1, e2}


def test_stream_passed_as_event_is_synchronised_and_released(rt):
    """A token carried through a loop reaches mgpuEventSynchronize/Destroy as a stream."""
    f = rt.mgpuModuleGetFunction(rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0), b"k")
    rt.fake.fake_set_busy_launches(1)
    s = rt.mgpuStreamCreate()
    rt.launch(f, stream=s)
    rt.mgpuEventSynchronize(s)
    rt.mgpuEventDestroy(s)
    assert rt.fake.counts("cuStreamSynchronize", "cuEventSynchronize", "cuEventDestroy") == {
        "cuStreamSynchronize": 1, "cuEventSynchronize": 0, "cuEventDestroy": 0}
    assert rt.stats()["live_streams"] == 0
    assert rt.mgpuStreamCreate() == s  # synchronised, so back in the pool


def test_streams_belong_to_the_thread_default_device(make_runtime):
    rt = make_runtime(devices=2)
    s0 = rt.mgpuStreamCreate()
    rt.mgpuSetDefaultDevice(1)
    s1 = rt.mgpuStreamCreate()
    assert (rt.fake.fake_stream_device(s0), rt.fake.fake_stream_device(s1)) == (0, 1)
    rt.mgpuStreamDestroy(s0)
    s1b = rt.mgpuStreamCreate()  # device 1 pool is empty: s0 (device 0) must not be handed out
    assert rt.fake.fake_stream_device(s1b) == 1 and s1b != s0
