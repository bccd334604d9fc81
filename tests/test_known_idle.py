"""A stream synchronized through the library just before its destroy is given back without
cuStreamQuery; any launch on it after that synchronization (from any thread) brings the query
back, so a stream with queued work is still never handed to a new owner."""

import threading

from conftest import blob_buffer, ptx


def _kernel(rt):
    return rt.mgpuModuleGetFunction(rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0), b"k")


def test_synchronized_stream_is_reused_without_a_query(rt):
    f = _kernel(rt)
    rt.fake.fake_set_busy_launches(1)
    s = rt.mgpuStreamCreate()
    rt.launch(f, stream=s)
    rt.mgpuStreamSynchronize(s)
    rt.mgpuStreamDestroy(s)
    assert rt.fake.count("cuStreamQuery") == 0
    assert rt.stats()["stream_query_skips"] == 1
    assert rt.mgpuStreamCreate() == s  # reused
    assert rt.fake.count("cuStreamCreate") == 1


def test_launch_after_the_synchronization_brings_the_query_back(rt):
    f = _kernel(rt)
    rt.fake.fake_set_busy_launches(1)
    s = rt.mgpuStreamCreate()
    rt.mgpuStreamSynchronize(s)
    rt.launch(f, stream=s)  # queued after the synchronization: still pending
    rt.mgpuStreamDestroy(s)
    assert rt.fake.count("cuStreamQuery") == 1
    assert rt.stats()["stream_query_skips"] == 0
    s2 = rt.mgpuStreamCreate()
    assert s2 != s  # busy: not handed out again


def test_launch_from_another_thread_clears_the_mark(rt):
    f = _kernel(rt)
    rt.fake.fake_set_busy_launches(1)
    s = rt.mgpuStreamCreate()
    rt.mgpuStreamSynchronize(s)
    t = threading.Thread(target=lambda: rt.launch(f, stream=s))
    t.start()
    t.join()
    rt.mgpuStreamDestroy(s)
    assert rt.stats()["stream_query_skips"] == 0
    assert rt.mgpuStreamCreate() != s


def test_only_the_synchronized_stream_skips_the_query(rt):
    rt.fake.fake_set_busy_launches(1)
    f = _kernel(rt)
    a, b = rt.mgpuStreamCreate(), rt.mgpuStreamCreate()
    rt.launch(f, stream=a)
    rt.mgpuStreamSynchronize(b)
    rt.mgpuStreamDestroy(a)  # not the synchronized one: queried, busy
    rt.mgpuStreamDestroy(b)
    assert rt.stats()["stream_query_skips"] == 1
    assert rt.fake.count("cuStreamQuery") == 1
    assert rt.mgpuStreamCreate() == b and rt.mgpuStreamCreate() not in (a, b)


def test_wait_event_after_the_synchronization_brings_the_query_back(rt):
    """A wait can hold the stream behind another stream's work (which may wait for a kernel not
    yet launched): such a stream must not be handed out unqueried."""
    f = _kernel(rt)
    rt.fake.fake_set_busy_launches(1)
    s = rt.mgpuStreamCreate()
    rt.mgpuStreamSynchronize(s)
    e = rt.mgpuEventCreate()
    rt.mgpuEventRecord(e, rt.mgpuStreamCreate())
    rt.mgpuStreamWaitEvent(s, e)
    rt.mgpuStreamDestroy(s)
    assert rt.stats()["stream_query_skips"] == 0
    assert rt.fake.count("cuStreamQuery") == 1


def test_stream_query_switch_always_queries(make_runtime):
    rt = make_runtime(env={"MGPU_CACHED_STREAM_QUERY": "1"})
    f = _kernel(rt)
    s = rt.mgpuStreamCreate()
    rt.launch(f, stream=s)
    rt.mgpuStreamSynchronize(s)
    rt.mgpuStreamDestroy(s)
    assert rt.stats()["stream_query_skips"] == 0
    assert rt.fake.count("cuStreamQuery") == 1
    assert rt.mgpuStreamCreate() == s  # idle after the query: reused all the same
