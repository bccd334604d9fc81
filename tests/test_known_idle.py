# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""A stream handle synchronized through the library, with no other use of it meanwhile, gives its
driver stream back without cuStreamQuery: no thread was inside a call on the handle and none
began one, and the driver stream never left the library, so everything enqueued on it has
completed. Any use that overlaps the synchronization keeps the stream bound (a later destroy then
queries), so a driver stream with queued work is still never handed to a new owner."""

import threading

import pytest

from conftest import blob_buffer, ptx


@pytest.fixture(autouse=True)
def _tagged_handles(monkeypatch):
    """Known-idle give-back needs the library's own handles (with driver handles the program may
    enqueue on the driver stream itself: every give-back asks the driver)."""
    monkeypatch.setenv("MGPU_CACHED_STREAM_HANDLES", "tagged")


def _kernel(rt):
    return rt.mgpuModuleGetFunction(rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0), b"k")


def test_synchronized_stream_is_reused_without_a_query(rt):
    f = _kernel(rt)
    rt.fake.fake_set_busy_launches(1)
    s = rt.mgpuStreamCreate()
    d = rt.driver_stream(f, s)
    rt.mgpuStreamSynchronize(s)
    rt.mgpuStreamDestroy(s)
    assert rt.fake.count("cuStreamQuery") == 0
    assert rt.stats()["stream_query_skips"] == 1
    assert rt.driver_stream(f, rt.mgpuStreamCreate()) == d  # reused
    assert rt.fake.count("cuStreamCreate") == 1


def test_synchronization_unbinds_the_handle_and_its_next_use_binds_again(rt):
    f = _kernel(rt)
    s = rt.mgpuStreamCreate()
    d = rt.driver_stream(f, s)
    rt.mgpuStreamSynchronize(s)
    other = rt.mgpuStreamCreate()
    assert rt.driver_stream(f, other) == d  # the idle driver stream serves another handle
    assert rt.driver_stream(f, s) != d  # s binds a new one: no order between s and other
    assert rt.stats()["stream_binds"] == 3


def test_launch_after_the_synchronization_brings_the_query_back(rt):
    f = _kernel(rt)
    rt.fake.fake_set_busy_launches(1)
    s = rt.mgpuStreamCreate()
    rt.mgpuStreamSynchronize(s)  # idle: gives its driver stream back (one query skipped)
    skips = rt.stats()["stream_query_skips"]
    d = rt.driver_stream(f, s)  # queued after the synchronization: still pending
    rt.mgpuStreamDestroy(s)
    assert rt.fake.count("cuStreamQuery") == 1
    assert rt.stats()["stream_query_skips"] == skips
    assert rt.driver_stream(f, rt.mgpuStreamCreate()) != d  # busy: not handed out again


def test_launch_racing_the_synchronization_never_pools_a_busy_stream(rt):
    """Launches from another thread race synchronizations of the same handle; whatever the
    interleaving, every driver stream the pool hands out afterwards has no pending work."""
    import ctypes
    f = _kernel(rt)
    query = rt.fake.lib.cuStreamQuery
    query.restype, query.argtypes = ctypes.c_int, [ctypes.c_void_p]
    rt.fake.fake_set_busy_launches(1)  # every launch stays pending until synchronized
    for _ in range(20):
        s = rt.mgpuStreamCreate()
        t = threading.Thread(target=lambda: [rt.launch(f, stream=s) for _ in range(100)])
        t.start()
        for _ in range(30):
            rt.mgpuStreamSynchronize(s)
        t.join()
        rt.mgpuStreamDestroy(s)
        handed = [rt.mgpuStreamCreate() for _ in range(3)]
        for h in handed:
            assert query(rt.pin(h)) == 0  # never a stream with queued work
            rt.mgpuStreamDestroy(h)
    assert rt.stats()["errors"] == 0


def test_only_the_synchronized_stream_skips_the_query(rt):
    rt.fake.fake_set_busy_launches(1)
    f = _kernel(rt)
    a, b = rt.mgpuStreamCreate(), rt.mgpuStreamCreate()
    da, db = rt.driver_stream(f, a), rt.driver_stream(f, b)
    rt.mgpuStreamSynchronize(b)
    rt.mgpuStreamDestroy(a)  # not the synchronized one: queried, busy
    rt.mgpuStreamDestroy(b)
    assert rt.stats()["stream_query_skips"] == 1
    assert rt.fake.count("cuStreamQuery") == 1
    assert rt.driver_stream(f, rt.mgpuStreamCreate()) == db
    assert rt.driver_stream(f, rt.mgpuStreamCreate()) not in (da, db)


def test_wait_event_after_the_synchronization_keeps_the_stream_bound(rt):
    """A wait can hold the stream behind another stream's work (which may wait for a kernel not
    yet launched): such a stream must not be handed out unqueried."""
    f = _kernel(rt)
    rt.fake.fake_set_busy_launches(1)
    s = rt.mgpuStreamCreate()
    rt.mgpuStreamSynchronize(s)
    skips = rt.stats()["stream_query_skips"]
    e = rt.mgpuEventCreate()
    rt.mgpuEventRecord(e, rt.mgpuStreamCreate())
    rt.mgpuStreamWaitEvent(s, e)
    rt.mgpuStreamDestroy(s)
    assert rt.stats()["stream_query_skips"] == skips
    assert rt.fake.count("cuStreamQuery") == 1


def test_stream_query_switch_always_queries(make_runtime):
    rt = make_runtime(env={"MGPU_CACHED_STREAM_QUERY": "1"})
    f = _kernel(rt)
    s = rt.mgpuStreamCreate()
    d = rt.driver_stream(f, s)
    rt.mgpuStreamSynchronize(s)
    rt.mgpuStreamDestroy(s)
    assert rt.stats()["stream_query_skips"] == 0
    assert rt.fake.count("cuStreamQuery") == 1
    assert rt.driver_stream(f, rt.mgpuStreamCreate()) == d  # idle after the query: reused


def test_a_stream_destroyed_without_any_use_is_reused_without_a_query(rt):
    """mgpuStreamCreate + mgpuStreamDestroy with no use between: the driver stream bound at the
    create was idle and nothing was enqueued on it, so it goes back idle without cuStreamQuery."""
    f = _kernel(rt)
    s = rt.mgpuStreamCreate()
    d = rt.driver_stream(f, s)  # a launch on it (the fake's launches complete at once)
    rt.mgpuStreamSynchronize(s)
    rt.mgpuStreamDestroy(s)
    queries = rt.fake.count("cuStreamQuery")
    for _ in range(5):
        rt.mgpuStreamDestroy(rt.mgpuStreamCreate())
    assert rt.fake.count("cuStreamQuery") == queries
    assert rt.fake.count("cuStreamCreate") == 1
    assert rt.driver_stream(f, rt.mgpuStreamCreate()) == d


def test_any_use_before_the_destroy_brings_the_query_back(rt):
    """Used after its create (a launch still pending in the fake): the destroy queries, and the busy
    driver stream is not handed to the next handle."""
    f = _kernel(rt)
    rt.fake.fake_set_busy_launches(1)
    s = rt.mgpuStreamCreate()
    d = rt.driver_stream(f, s)
    rt.mgpuStreamDestroy(s)
    assert rt.fake.count("cuStreamQuery") == 1
    assert rt.driver_stream(f, rt.mgpuStreamCreate()) != d
