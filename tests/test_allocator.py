"""The caching allocator behind mgpuMemAlloc / mgpuMemFree, against the recording fake driver:
reuse only once the whole device has finished the work enqueued before the free (the reclaimer's
device-wide wait, R1 of the review), stream-ordered reuse only behind its switch (R2), reused blocks
that read as zeros like fresh ones (and the opt-out), allocations that never wait for the program's
kernels (the fake's cuCtxSynchronize can be held blocked), out-of-memory recovery that does not hang,
the cap, foreign pointers, the switches that restore the stock calls, statistics, threads, fork."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import threading
import time
from contextlib import contextmanager

import pytest

import mgpu_cached

from conftest import CC, DATA, DRIVERS, ROOT, blob_buffer, compile_shared, ptx, until

KIB = 1024


def setup_fake(rt):
    f = rt.fake.lib
    f.fake_set_memory_limit.argtypes = [ctypes.c_size_t]
    f.fake_memory_used.restype = ctypes.c_size_t
    f.fake_frees_while_pending.restype = ctypes.c_long
    f.fake_hold.argtypes = [ctypes.c_int]
    f.fake_blocked.restype = ctypes.c_int
    f.fake_thread_waits.restype = ctypes.c_long
    f.cuStreamQuery.argtypes = [ctypes.c_void_p]
    return rt


@pytest.fixture(autouse=True)
def every_size_cached(monkeypatch):
    """These tests follow small blocks through the cache, most of them allocated on the NULL
    stream, which by default go straight to the driver (MGPU_CACHED_ALLOCATOR_SYNC_DIRECT_MAX;
    tests/test_allocator_sync.py covers that rule): here every size is cached."""
    monkeypatch.setenv("MGPU_CACHED_ALLOCATOR_SYNC_DIRECT_MAX", "0")


@pytest.fixture
def art(make_runtime):
    return setup_fake(make_runtime())


def busy_kernel(rt):
    """A kernel whose launches leave work pending on their stream until fake_complete."""
    rt.fake.fake_set_busy_launches(1)
    m = rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0)
    return rt.mgpuModuleGetFunction(m, b"k")


def words(p, n):
    return list(ctypes.cast(p, ctypes.POINTER(ctypes.c_uint32))[:n])


def fill(p, nbytes, byte=0x55):
    """Write the block from the host (fake device memory is host memory)."""
    ctypes.memset(p, byte, nbytes)


def used(rt, p, value=0x55555555):
    """The program's work on the block: a memset of its first word through the library. A
    host_shared block no work of the library could have touched is freed with the stock cuMemFree
    (NULL stream); a used one is kept."""
    rt.mgpuMemset32(p, value, 1, None)
    return p


def settle(rt):
    """Wait until every block freed on a stream has been cleared and made ready."""
    until(lambda: rt.stats()["alloc_bytes_pending"] == 0, "the reclaimer")


def pending(rt, stream):
    """The driver stream behind `stream` has work queued (library handles translated, conftest)."""
    return rt.fake.cuStreamQuery(rt.fake.translate(stream)) == 600  # CUDA_ERROR_NOT_READY


@contextmanager
def device_stuck(rt):
    """The GPU is stuck behind a kernel that waits for the host: every call that has to wait for
    pending work blocks until the end of the block (then the work finishes)."""
    rt.fake.fake_hold(1)
    try:
        yield
    finally:
        rt.fake.fake_hold(0)


def foreign_stream(rt):
    """A driver stream made by the program itself, which the library never sees created."""
    f = rt.fake
    f.fake_set_current_context(f.fake_primary_context(0))
    s = ctypes.c_void_p()
    assert f.lib.cuStreamCreate(ctypes.byref(s), 1) == 0
    f.fake_set_current_context(None)
    return s


def test_freed_block_is_reused_without_driver_calls(art):
    p = art.mgpuMemAlloc(1000, None, False)
    art.mgpuMemFree(p, None)  # NULL stream: waits for the device, as cuMemFree does
    art.fake.fake_reset()
    for _ in range(100):
        q = art.mgpuMemAlloc(900, None, False)  # same size class (1 KiB)
        assert q == p
        art.mgpuMemFree(q, None)
    # each free: the device-wide wait of cuMemFree, and the block cleared on the library's stream,
    # not waited for (issue 21): the next allocation finds no ready block of its class and asks
    # the clearing stream once (the fake's memsets are done at once; on a GPU the next free's
    # device-wide wait proves them and two blocks take turns)
    assert art.fake.counts("cuMemAlloc", "cuMemFree", "cuCtxSynchronize", "cuMemsetD32Async",
                           "cuStreamSynchronize", "cuStreamQuery", "cuEventRecord") == {
        "cuMemAlloc": 0, "cuMemFree": 0, "cuCtxSynchronize": 100, "cuMemsetD32Async": 100,
        "cuStreamSynchronize": 0, "cuStreamQuery": 100, "cuEventRecord": 0}
    s = art.stats()
    assert (s["alloc_hits"], s["alloc_misses"]) == (100, 1)
    assert (s["alloc_bytes_in_use"], s["alloc_bytes_cached"]) == (0, KIB)
    assert s["alloc_bytes_zeroed"] == 101 * KIB


def test_size_classes_round_up_by_at_most_a_quarter(art):
    used = art.fake.fake_memory_used
    for asked, got in [(1, 512), (513, 640), (1000, 1024), (1025, 1280), (3 << 20, 3 << 20),
                       ((5 << 20) + 1, 6 << 20)]:
        before = used()
        art.mgpuMemAlloc(asked, None, False)
        assert used() - before == got, asked
    # different classes never share a block; the same class does
    a = art.mgpuMemAlloc(1000, None, False)
    b = art.mgpuMemAlloc(1100, None, False)
    assert a != b and art.mgpuMemAlloc(0, None, False) is None


def test_device_and_host_shared_blocks_are_kept_apart(art):
    d = art.mgpuMemAlloc(4 * KIB, None, False)
    art.mgpuMemFree(d, None)
    h = art.mgpuMemAlloc(4 * KIB, None, True)
    assert h != d
    assert art.fake.counts("cuMemAlloc", "cuMemAllocManaged") == {"cuMemAlloc": 1,
                                                                  "cuMemAllocManaged": 1}
    art.mgpuMemFree(used(art, h), None)
    assert art.mgpuMemAlloc(4 * KIB, None, True) == h
    assert art.mgpuMemAlloc(4 * KIB, None, False) == d


@pytest.mark.parametrize("host_shared", [False, True], ids=["device", "host_shared"])
@pytest.mark.parametrize("kernel_stream", ["ours"])
def test_block_freed_on_a_stream_waits_for_every_stream_of_the_device(art, host_shared,
                                                                      kernel_stream):
    """R1: a kernel on B uses p, p is freed on A. p comes back only after the reclaimer's fence
    (an event on every stream of the library's pools and on the legacy stream) has passed. A
    foreign non-blocking B is the documented boundary (test_allocator_neighbour.py)."""
    k = busy_kernel(art)
    a = art.mgpuStreamCreate()
    b = art.mgpuStreamCreate() if kernel_stream == "ours" else foreign_stream(art)
    p = art.mgpuMemAlloc(4 * KIB, None if host_shared else a, host_shared)
    fill(p, 4 * KIB)
    with device_stuck(art):
        art.launch(k, stream=b)  # uses p, never joined into a
        art.mgpuMemFree(p, a)
        until(lambda: art.fake.fake_blocked() == 1, "the reclaimer's fence")
        got = {art.mgpuMemAlloc(4 * KIB, s, host_shared) for s in (None, a, b)}
        assert p not in got and pending(art, b)
        assert art.fake.count("cuMemFree") == 0
    settle(art)  # the device-wide wait passed: b's kernel has finished
    assert not pending(art, b)
    assert art.mgpuMemAlloc(4 * KIB, None, host_shared) == p
    assert words(p, KIB) == [0] * KIB  # cleared, as a fresh block
    assert art.stats()["alloc_reclaims"] >= 1


@pytest.mark.parametrize("host_shared", [False, True])
def test_ready_blocks_are_handed_out_lowest_address_first(art, host_shared):
    """Whatever order the blocks were freed (and readied) in, the allocations after take them in
    address order: a loop's allocations get the same blocks each time round, and the graph path's
    execs keep their argument values (allocator.c, bin_insert_sorted)."""
    s = art.mgpuStreamCreate()
    blocks = [art.mgpuMemAlloc(KIB, None if host_shared else s, host_shared) for _ in range(5)]
    for i in (3, 0, 4, 2, 1):  # neither address order nor its reverse
        art.mgpuMemFree(blocks[i], s)
    settle(art)
    again = [art.mgpuMemAlloc(KIB, None if host_shared else s, host_shared) for _ in range(5)]
    assert again == sorted(blocks)
    assert art.stats()["alloc_hits"] == 5


@pytest.mark.parametrize("gather_us", [None, "0"], ids=["default", "off"])
def test_the_reclaimer_gathers_frees_after_a_free_on_a_working_stream(make_runtime, gather_us):
    """By default (MGPU_CACHED_ALLOCATOR_RECLAIM_US=50) a round that follows a free on a stream the
    library enqueued work on and has not synchronised since first gathers the frees that follow
    (alloc_gathers): a loop that frees while its kernels run meets one round per gathering time. A
    free on a stream without such work (a program that waited for its work before it freed, as
    MLIR's alloc_loop does) is reclaimed at once, so its block is back for its next allocation.
    With 0 no round gathers. (The H100 measurements: allocator.c.)"""
    env = {} if gather_us is None else {"MGPU_CACHED_ALLOCATOR_RECLAIM_US": gather_us}
    rt = setup_fake(make_runtime(env=env))
    k = busy_kernel(rt)
    expect = 0
    steps = ((False, False), (True, False), (True, True), (False, False), (True, False))
    for n, (launch, sync) in enumerate(steps, start=1):
        s = rt.mgpuStreamCreate()
        p = rt.mgpuMemAlloc(KIB, s, False)
        if launch:
            rt.launch(k, stream=s)
        if sync:
            rt.mgpuStreamSynchronize(s)
        rt.mgpuMemFree(p, s)
        settle(rt)
        expect += launch and not sync and gather_us is None
        st = rt.stats()
        assert (st["alloc_reclaims"], st["alloc_gathers"]) == (n, expect)
        rt.mgpuStreamDestroy(s)


def test_stream_free_makes_no_driver_call_and_reuses_after_the_reclaimer(art):
    s = art.mgpuStreamCreate()
    p = art.mgpuMemAlloc(KIB, s, False)
    art.fake.fake_reset()
    art.mgpuMemFree(p, s)
    settle(art)
    log = art.fake.log()
    # only the reclaimer's calls: its context, its stream, the fence (events), the clearing; never
    # a device-wide wait (issue 19: cuCtxSynchronize invalidates every capture of the process)
    assert "cuMemFree" not in log and "cuCtxSynchronize" not in log
    assert log.index("cuEventSynchronize") < log.index("cuMemsetD32Async")
    art.fake.fake_reset()
    for _ in range(10):
        q = art.mgpuMemAlloc(KIB, s, False)
        assert q == p
        art.mgpuMemFree(q, s)
        settle(art)
    assert art.fake.count("cuMemAlloc") == 0 and art.fake.count("cuCtxSynchronize") == 0
    s_ = art.stats()
    assert (s_["alloc_hits"], s_["alloc_ordered_hits"], s_["alloc_misses"]) == (10, 0, 1)


@pytest.mark.parametrize("ordered", [False, True], ids=["default", "ORDERED=1"])
def test_same_stream_reuse_only_behind_the_switch(make_runtime, ordered):
    """R2: p freed on A while A's kernel still uses it. By default the next allocation on A does
    not get it; with MGPU_CACHED_ALLOCATOR_ORDERED=1 it does (device memory only), cleared on A."""
    env = {"MGPU_CACHED_ALLOCATOR_ORDERED": "1"} if ordered else {}
    rt = setup_fake(make_runtime(env=env))
    k = busy_kernel(rt)
    a = rt.mgpuStreamCreate()
    p = rt.mgpuMemAlloc(KIB, a, False)
    h = rt.mgpuMemAlloc(KIB, None, True)
    fill(p, KIB)
    with device_stuck(rt):
        rt.launch(k, stream=a)
        rt.mgpuMemFree(p, a)
        rt.mgpuMemFree(h, a)
        until(lambda: rt.fake.fake_blocked() == 1, "the reclaimer's cuCtxSynchronize")
        memsets = rt.fake.count("cuMemsetD32Async")
        q = rt.mgpuMemAlloc(KIB, a, False)
        assert (q == p) == ordered and pending(rt, a)
        assert rt.mgpuMemAlloc(KIB, a, True) != h  # the host may touch it at once: never early
        assert rt.stats()["alloc_ordered_hits"] == int(ordered)
        if ordered:  # cleared on a, behind the old kernel
            assert rt.fake.count("cuMemsetD32Async") == memsets + 1
            assert rt.fake.fake_last_stream() == rt.fake.translate(a) and words(q, KIB // 4) == [0] * (KIB // 4)
    settle(rt)
    assert rt.mgpuMemAlloc(KIB, None, True) == h


def test_ordered_reuse_never_follows_a_foreign_stream(make_runtime):
    rt = setup_fake(make_runtime(env={"MGPU_CACHED_ALLOCATOR_ORDERED": "1"}))
    k = busy_kernel(rt)
    ours = rt.mgpuStreamCreate()
    foreign = foreign_stream(rt)
    with device_stuck(rt):
        p = rt.mgpuMemAlloc(KIB, foreign, False)
        rt.launch(k, stream=foreign)
        rt.mgpuMemFree(p, foreign)
        assert rt.mgpuMemAlloc(KIB, foreign, False) != p
        assert rt.mgpuMemAlloc(KIB, ours, False) != p
    settle(rt)
    assert rt.mgpuMemAlloc(KIB, ours, False) == p


@pytest.mark.parametrize("host_shared", [False, True], ids=["device", "host_shared"])
@pytest.mark.parametrize("free_on", ["NULL", "stream"])
@pytest.mark.parametrize("zero", [True, False], ids=["zeroed", "ZERO=0"])
def test_reused_block_reads_as_fresh_memory(make_runtime, host_shared, free_on, zero):
    """A fresh block reads as zeros (the fake's memory is calloc'ed, as cuMemAlloc's reads on the
    GPU); so does a reused one, unless MGPU_CACHED_ALLOCATOR_ZERO=0, where the old bytes stay (the
    test can fail)."""
    rt = setup_fake(make_runtime(env={} if zero else {"MGPU_CACHED_ALLOCATOR_ZERO": "0"}))
    s = rt.mgpuStreamCreate()
    p = rt.mgpuMemAlloc(64 * KIB, None, host_shared)
    assert words(p, 16 * KIB) == [0] * (16 * KIB)
    fill(p, 64 * KIB)
    rt.mgpuMemFree(used(rt, p), None if free_on == "NULL" else s)
    settle(rt)
    q = rt.mgpuMemAlloc(64 * KIB, None, host_shared)
    assert q == p
    assert words(q, 16 * KIB) == ([0] * (16 * KIB) if zero else [0x55555555] * (16 * KIB))
    assert rt.stats()["alloc_bytes_zeroed"] == (64 * KIB if zero else 0)


def test_allocation_never_waits_for_the_programs_kernels(art):
    """The device is stuck behind a kernel that waits for the host (the fake's synchronising calls
    block). Allocations and stream frees still return, and this thread made no call that waits for
    pending work, while the reclaimer sits blocked in cuCtxSynchronize."""
    k = busy_kernel(art)
    s1, s2 = art.mgpuStreamCreate(), art.mgpuStreamCreate()
    warm = [art.mgpuMemAlloc(n, None, hs) for n in (KIB, 8 * KIB) for hs in (False, True)]
    for p in warm:
        art.mgpuMemFree(used(art, p), None)  # ready blocks: hits below
    with device_stuck(art):
        art.launch(k, stream=s1)  # spins on a host flag, say
        waits = art.fake.fake_thread_waits()
        for i in range(50):
            ps = [art.mgpuMemAlloc(n, s, hs) for n in (KIB, 8 * KIB, 100 * KIB)
                  for s in (None, s1, s2) for hs in (False, True)]
            assert None not in ps
            for p in ps:
                art.mgpuMemFree(p, s2 if i % 2 else s1)
        until(lambda: art.fake.fake_blocked() == 1, "the reclaimer's cuCtxSynchronize")
        assert art.fake.fake_thread_waits() == waits  # never waited for the kernel
        assert pending(art, s1) and art.stats()["alloc_hits"] == 4
    settle(art)


def test_eviction_waits_for_work_still_using_the_block(make_runtime):
    rt = setup_fake(make_runtime(env={"MGPU_CACHED_ALLOCATOR_CACHE_BYTES": "2048"}))
    k = busy_kernel(rt)
    s = rt.mgpuStreamCreate()
    ps = [rt.mgpuMemAlloc(KIB, s, False) for _ in range(3)]
    rt.launch(k, stream=s)
    for p in ps:
        rt.mgpuMemFree(p, s)
    settle(rt)  # cleared; the round gives the block over the cap back after that
    until(lambda: rt.fake.count("cuMemFree") == 1, "the eviction")
    assert rt.stats()["alloc_bytes_cached"] == 2 * KIB
    assert rt.fake.fake_frees_while_pending() == 0
    assert rt.fake.count("cuMemFree") == 1


def test_results_computed_into_reused_buffers(art):
    s = art.mgpuStreamCreate()
    src = art.mgpuMemAlloc(256, None, True)
    for i in range(20):
        dst = art.mgpuMemAlloc(256, s, False)
        art.mgpuMemset32(src, i, 64, s)
        art.mgpuMemset32(dst, 0xFFFFFFFF, 64, s)
        art.mgpuMemcpy(dst, src, 128, s)  # first half overwritten
        art.mgpuStreamSynchronize(s)
        assert words(dst, 64) == [i] * 32 + [0xFFFFFFFF] * 32
        art.mgpuMemFree(dst, s)
        settle(art)
    assert art.stats()["alloc_hits"] == 19


def test_cap_bounds_the_cached_bytes(make_runtime):
    rt = setup_fake(make_runtime(env={"MGPU_CACHED_ALLOCATOR_CACHE_BYTES": "4K"}))
    ps = [rt.mgpuMemAlloc(KIB, None, False) for _ in range(6)]
    for p in ps:
        rt.mgpuMemFree(p, None)
    s = rt.stats()
    assert s["alloc_bytes_cached"] == 4 * KIB and s["alloc_releases"] == 2
    assert rt.fake.count("cuMemFree") == 2 and rt.fake.fake_memory_used() == 4 * KIB
    # the least recently freed went back: the kept ones are the last four
    assert {rt.mgpuMemAlloc(KIB, None, False) for _ in range(4)} == set(ps[2:])
    # bigger than the cap: allocated at its exact size and never kept
    big = rt.mgpuMemAlloc(5000, None, False)
    assert rt.fake.fake_memory_used() == 4 * KIB + 5000
    rt.mgpuMemFree(big, None)
    assert rt.fake.count("cuMemFree") == 3 and rt.stats()["alloc_bytes_cached"] == 0


def test_cap_zero_keeps_nothing(make_runtime):
    rt = setup_fake(make_runtime(env={"MGPU_CACHED_ALLOCATOR_CACHE_BYTES": "0"}))
    p = rt.mgpuMemAlloc(100, None, False)
    assert rt.fake.fake_memory_used() == 100
    rt.mgpuMemFree(p, None)
    assert rt.fake.count("cuMemFree") == 1 and rt.fake.fake_memory_used() == 0


def test_out_of_memory_releases_the_cache_and_retries(make_runtime, capfd):
    # no headroom check: it would give the cache back before memory runs out
    # (test_allocator_neighbour.py)
    art = setup_fake(make_runtime(env={"MGPU_CACHED_ALLOCATOR_HEADROOM": "0"}))
    art.fake.fake_set_memory_limit(8 * KIB)
    k = busy_kernel(art)
    s = art.mgpuStreamCreate()
    a, b = art.mgpuMemAlloc(2 * KIB, s, False), art.mgpuMemAlloc(2 * KIB, None, True)
    art.mgpuMemFree(used(art, b), None)
    art.launch(k, stream=s)
    art.mgpuMemFree(a, s)  # still in use when memory runs out
    waits = art.fake.fake_thread_waits()
    c = art.mgpuMemAlloc(6 * KIB, None, False)  # needs the cached 4 KiB back
    assert c is not None
    assert art.fake.fake_thread_waits() == waits  # the reclaimer waited and freed, not this thread
    s_ = art.stats()
    assert (s_["alloc_oom_retries"], s_["alloc_releases"], s_["alloc_bytes_cached"]) == (1, 2, 0)
    assert s_["alloc_oom_timeouts"] == 0
    assert art.fake.fake_frees_while_pending() == 0  # waited for the kernel before freeing
    assert art.fake.fake_memory_used() == 6 * KIB
    assert capfd.readouterr().err == ""


def test_out_of_memory_with_the_device_stuck_does_not_hang(make_runtime, capfd):
    """The device is busy with a kernel that waits for the host: the cached memory cannot be given
    back (cuMemFree would wait for the kernel). The allocation waits for the reclaimer at most
    MGPU_CACHED_ALLOCATOR_OOM_WAIT_MS, then reports out of memory; the memory comes back once the
    kernel has ended."""
    # RECLAIM_US: the reclaimer's first round starts 100 ms after the first free, so it covers
    # both frees (a round started between them left b pending and out of the release: a flake)
    # HEADROOM=0: near capacity a free waits for the device as stock's does (a hang here, as with
    # stock: test_allocator_neighbour.py); this test is about the allocation's wait
    rt = setup_fake(make_runtime(env={"MGPU_CACHED_ALLOCATOR_OOM_WAIT_MS": "50",
                                      "MGPU_CACHED_ALLOCATOR_RECLAIM_US": "100000",
                                      "MGPU_CACHED_ALLOCATOR_HEADROOM": "0"}))
    rt.fake.fake_set_memory_limit(8 * KIB)
    k = busy_kernel(rt)
    s = rt.mgpuStreamCreate()
    a, b = rt.mgpuMemAlloc(4 * KIB, s, False), rt.mgpuMemAlloc(2 * KIB, s, True)
    with device_stuck(rt):
        rt.launch(k, stream=s)
        rt.mgpuMemFree(a, s)
        rt.mgpuMemFree(b, s)
        until(lambda: rt.fake.fake_blocked() == 1, "the reclaimer's cuCtxSynchronize")
        waits = rt.fake.fake_thread_waits()
        assert rt.mgpuMemAlloc(6 * KIB, None, False) is None
        assert rt.fake.fake_thread_waits() == waits
        assert capfd.readouterr().err.splitlines() == [
            "'cuMemAlloc' failed with 'CUDA_ERROR_OUT_OF_MEMORY'"]
        st = rt.stats()
        assert (st["alloc_oom_retries"], st["alloc_oom_timeouts"], st["alloc_releases"]) == (1, 1, 0)
    # the kernel ended: the reclaimer finishes the release it was asked for
    until(lambda: rt.fake.fake_memory_used() == 0, "the release")
    assert rt.fake.fake_frees_while_pending() == 0
    assert rt.mgpuMemAlloc(6 * KIB, None, False) is not None


def test_out_of_memory_falls_back_to_the_exact_size(art):
    art.fake.fake_set_memory_limit(4500)
    p = art.mgpuMemAlloc(4200, None, False)  # the 5 KiB class does not fit, 4200 bytes do
    assert p is not None and art.fake.fake_memory_used() == 4200
    art.mgpuMemFree(p, None)  # not a class size: never kept
    assert art.fake.fake_memory_used() == 0 and art.stats()["alloc_bytes_cached"] == 0


def test_out_of_memory_is_reported_like_stock(art, capfd):
    art.fake.fake_set_memory_limit(4 * KIB)
    assert art.mgpuMemAlloc(8 * KIB, None, False) is None
    assert art.mgpuMemAlloc(8 * KIB, None, True) is None
    assert capfd.readouterr().err.splitlines() == [
        "'cuMemAlloc' failed with 'CUDA_ERROR_OUT_OF_MEMORY'",
        "'cuMemAllocManaged' failed with 'CUDA_ERROR_OUT_OF_MEMORY'"]
    assert art.stats()["alloc_bytes_in_use"] == 0


def test_foreign_pointers_go_to_cumemfree(art, capfd):
    f = art.fake
    f.fake_set_current_context(f.fake_primary_context(0))
    p = ctypes.c_uint64()
    assert f.lib.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(64)) == 0
    f.fake_set_current_context(None)
    art.mgpuMemFree(ctypes.c_void_p(p.value), None)
    assert f.count("cuMemFree") == 1 and f.fake_memory_used() == 0
    art.mgpuMemFree(None, None)  # as stock: cuMemFree(0)
    assert f.count("cuMemFree") == 2
    assert capfd.readouterr().err == ""


def test_double_free_is_reported_and_the_cache_stays_intact(art, capfd):
    p = art.mgpuMemAlloc(KIB, None, False)
    art.mgpuMemFree(p, None)
    art.mgpuMemFree(p, None)
    assert capfd.readouterr().err.splitlines() == [
        "'mgpuMemFree' failed with 'MGPU_CACHED_STALE_HANDLE'"]
    assert art.fake.count("cuMemFree") == 0
    assert art.mgpuMemAlloc(KIB, None, False) == p
    assert art.mgpuMemAlloc(KIB, None, False) != p  # handed out once only


def test_a_free_on_something_that_is_not_a_stream_is_the_stock_free(art):
    """The stock cuMemFree ignores the stream. A free on a stream the library did not create gets
    an event recorded on that stream (issue 19: the reclaimer's fence covers only the library's
    streams); where that fails (here: not a stream at all) the free is the stock cuMemFree."""
    bogus = ctypes.c_void_p(0x1234)
    p = art.mgpuMemAlloc(KIB, None, False)
    art.mgpuMemFree(p, bogus)
    settle(art)
    assert art.fake.count("cuMemFree") == 1 and art.stats()["alloc_bytes_cached"] == 0
    assert art.fake.fake_memory_used() == 0


def test_blocks_belong_to_their_device(make_runtime):
    rt = setup_fake(make_runtime(devices=2))
    p = rt.mgpuMemAlloc(KIB, None, False)
    rt.mgpuMemFree(p, None)
    rt.mgpuSetDefaultDevice(1)
    q = rt.mgpuMemAlloc(KIB, None, False)
    assert q != p and rt.fake.count("cuMemAlloc") == 2
    rt.mgpuMemFree(q, None)
    rt.mgpuSetDefaultDevice(0)
    assert rt.mgpuMemAlloc(KIB, None, False) == p


def test_each_device_has_its_own_reclaimer_and_wait(make_runtime):
    """A block freed on device 1 waits for device 1 (cuCtxSynchronize in its context): the
    reclaimer of device 0 never makes it ready, and device 1's pending kernel is finished once it
    comes back."""
    rt = setup_fake(make_runtime(devices=2))
    k = busy_kernel(rt)
    rt.mgpuSetDefaultDevice(1)
    s1 = rt.mgpuStreamCreate()
    assert rt.fake.fake_stream_device(s1) == 1
    p = rt.mgpuMemAlloc(KIB, s1, False)
    rt.mgpuSetDefaultDevice(0)
    s0 = rt.mgpuStreamCreate()
    q = rt.mgpuMemAlloc(KIB, s0, False)
    with device_stuck(rt):
        rt.mgpuSetDefaultDevice(1)
        rt.launch(k, stream=s1)
        rt.mgpuMemFree(p, s1)  # device 1's reclaimer blocks behind the kernel on device 1
        rt.mgpuSetDefaultDevice(0)
        rt.mgpuMemFree(q, s0)  # device 0 has nothing pending: its reclaimer finishes
        until(lambda: rt.stats()["alloc_bytes_pending"] == KIB, "device 0's reclaimer")
        until(lambda: rt.fake.fake_blocked() == 1, "device 1's reclaimer's cuCtxSynchronize")
        assert rt.mgpuMemAlloc(KIB, None, False) == q
        assert rt.fake.fake_blocked() == 1 and pending(rt, s1)
    settle(rt)
    assert not pending(rt, s1)
    rt.mgpuSetDefaultDevice(1)
    assert rt.mgpuMemAlloc(KIB, None, False) == p


def test_release_gives_every_cached_block_back(art):
    ps = [art.mgpuMemAlloc(n, None, hs) for n in (100, 5000, 70000) for hs in (False, True)]
    for p in ps:
        art.mgpuMemFree(used(art, p), None)
    assert art.info.allocator_release() == 6
    assert art.fake.fake_memory_used() == 0 and art.stats()["alloc_bytes_cached"] == 0
    assert art.info.allocator_release() == 0


@pytest.mark.parametrize("env", [{"MGPU_CACHED_ALLOCATOR": "0"}, {"MGPU_CACHED_DISABLE": "1"}])
def test_switches_restore_the_stock_calls(make_runtime, env):
    rt = setup_fake(make_runtime(env=env))
    s = rt.mgpuStreamCreate()
    for _ in range(3):
        p = rt.mgpuMemAlloc(KIB, s, False)
        h = rt.mgpuMemAlloc(KIB, None, True)
        rt.mgpuMemFree(p, s)
        rt.mgpuMemFree(h, None)
    assert rt.fake.counts("cuMemAlloc", "cuMemAllocManaged", "cuMemFree", "cuEventRecord",
                          "cuCtxSynchronize") == {"cuMemAlloc": 3, "cuMemAllocManaged": 3,
                                                  "cuMemFree": 6, "cuEventRecord": 0,
                                                  "cuCtxSynchronize": 0}
    assert rt.fake.fake_memory_used() == 0
    s_ = rt.stats()
    assert s_["alloc_hits"] == s_["alloc_misses"] == 0


def test_threads_never_share_a_block(art):
    errors = []

    def body(tid):
        for i in range(300):
            p = art.mgpuMemAlloc(256 + 64 * (i % 4), None, bool(i % 2))
            art.mgpuMemset32(p, tid, 64, None)
            got = words(p, 64)
            art.mgpuMemFree(p, None)
            if got != [tid] * 64:
                errors.append((tid, i))

    threads = [threading.Thread(target=body, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    s = art.stats()
    assert s["alloc_hits"] + s["alloc_misses"] == 1200 and s["alloc_bytes_in_use"] == 0


@pytest.fixture(scope="module")
def fork_exit_program(tmp_path_factory, fake_driver_build):
    if CC is None:
        pytest.skip("no C compiler")
    exe = tmp_path_factory.mktemp("alloc") / "fork_exit"
    subprocess.run([CC, "-std=c11", "-D_GNU_SOURCE", "-O1", "-pthread", f"-I{ROOT / 'csrc'}",
                    "-o", str(exe), *map(str, sorted((ROOT / "csrc").glob("*/*.c"))),
                    str(DATA / "alloc" / "fork_exit.c"), "-ldl"], check=True)
    return exe


def run_fork_exit(exe, fake, mode):
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake))
    env.pop("MGPU_CACHED_DISABLE", None)
    return subprocess.run([str(exe), mode], env=env, capture_output=True, text=True, timeout=60)


def test_fork_child_gets_a_fresh_allocator(fork_exit_program, fake_driver_build):
    """mc_alloc_fork_prepare/parent/child around fork() while the parent's reclaimer is blocked in
    cuCtxSynchronize: the child's hook makes no driver call, the child hands out none of the
    parent's blocks and runs a reclaimer of its own; the parent is intact (tests/data/alloc)."""
    p = run_fork_exit(fork_exit_program, fake_driver_build, "fork")
    assert p.returncode == 0 and p.stdout.split() == ["child", "ok", "ok"], p.stdout + p.stderr


def test_exit_while_the_reclaimer_is_blocked(fork_exit_program, fake_driver_build):
    """main returns while the reclaimer sits in a cuCtxSynchronize that never returns: the detached
    thread does not keep the process alive."""
    p = run_fork_exit(fork_exit_program, fake_driver_build, "exit")
    assert p.returncode == 0 and p.stdout.split() == ["ok"], p.stdout + p.stderr


def test_unloading_the_library_while_the_reclaimer_runs(tmp_path, fake_driver_build):
    """A host dlcloses the library (mlir-cpu-runner does, at exit) while the reclaimer thread is
    inside it (asleep in MGPU_CACHED_ALLOCATOR_RECLAIM_US before its round): the library is
    linked -z nodelete, so the thread never runs unmapped code and the host lives on."""
    if CC is None:
        pytest.skip("no C compiler")
    exe = tmp_path / "dlclose_reclaimer"
    subprocess.run([CC, "-std=c11", "-D_GNU_SOURCE", "-O1", "-o", str(exe),
                    str(DATA / "alloc" / "dlclose_reclaimer.c"), "-ldl"], check=True)
    lib = tmp_path / "libmgpu_cached_copy.so"
    shutil.copyfile(mgpu_cached.library_path(), lib)
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake_driver_build),
               MGPU_CACHED_ALLOCATOR_RECLAIM_US="200000")
    env.pop("MGPU_CACHED_DISABLE", None)
    p = subprocess.run([str(exe), str(lib)], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.split() == ["survived"], (p.returncode, p.stderr)


# ---- issue 21: the NULL-stream pair (alloc + free(NULL), MLIR's synchronous gpu.alloc/dealloc) ----

PAIR_SIZES = [256, 4 * KIB, 64 * KIB, 1 << 20, 16 << 20, 64 << 20]


@pytest.mark.parametrize("touched", [True, False], ids=["used", "untouched"])
@pytest.mark.parametrize("host_shared", [False, True], ids=["device", "host_shared"])
@pytest.mark.parametrize("size", PAIR_SIZES)
def test_null_stream_pair_driver_calls(make_runtime, size, host_shared, touched):
    """Driver calls per alloc + free(NULL) pair after warm-up, cached against stock behaviour.
    Cached: the free's device-wide wait (where the stock cuMemFree waits) and the clearing memset,
    not waited for (no cuStreamSynchronize); no driver allocation or free. The fake completes
    memsets at once, so each allocation asks the clearing stream once (cuStreamQuery); on a GPU
    the next free's device-wide wait proves the memset and two blocks take turns. cuMemGetInfo
    (the headroom, at most once per millisecond) is not counted: it depends on time. Stock:
    cuMemAlloc(Managed) + cuMemFree. A host_shared block no work of the library touched between
    the two (no memset of the program's here) is freed as stock frees it: the stock pair."""
    n = 20

    def pair():
        p = rt.mgpuMemAlloc(size, None, host_shared)
        if touched:
            rt.mgpuMemset32(p, 7, 1, None)
        rt.mgpuMemFree(p, None)
    counted = ("cuCtxSynchronize", "cuMemsetD32Async", "cuStreamSynchronize", "cuStreamQuery",
               "cuMemAlloc", "cuMemAllocManaged", "cuMemFree", "cuMemAllocFromPoolAsync",
               "cuMemFreeAsync", "cuEventRecord", "cuEventQuery", "cuEventSynchronize")
    per_pair = {}
    for mode, disable in (("cached", False), ("stock", True)):
        rt = setup_fake(make_runtime(disable=disable))
        for _ in range(3):
            pair()
        rt.fake.fake_reset()
        for _ in range(n):
            pair()
        c = rt.fake.counts(*counted)
        per_pair[mode] = {k: v / n for k, v in c.items() if v}
        if not disable:
            assert rt.stats()["alloc_untouched_frees"] == (0 if touched or not host_shared
                                                           else n + 3)
    alloc = "cuMemAllocManaged" if host_shared else "cuMemAlloc"
    memsets = {"cuMemsetD32Async": 1} if touched else {}
    assert per_pair["stock"] == {alloc: 1, "cuMemFree": 1, **memsets}
    if host_shared and not touched:
        assert per_pair["cached"] == per_pair["stock"]
    else:
        assert per_pair["cached"] == {"cuCtxSynchronize": 1, "cuStreamQuery": 1,
                                      "cuMemsetD32Async": 2 if touched else 1}


def test_null_stream_pair_with_a_busy_clearing_stream_never_hands_out_an_uncleared_block(
        make_runtime):
    """The executing fake (FAKECUDA_EXEC=1) defers every memset until a synchronisation or a
    query runs it (a query runs one operation with probability 1/2). A block freed with the NULL
    stream is handed out again only once its memset has run: otherwise the memset would run later
    over the new owner's bytes. Both outcomes must show: reused after the query ran it, and a
    driver allocation while it had not."""
    rt = setup_fake(make_runtime(env={"FAKECUDA_EXEC": "1", "FAKECUDA_SEED": "7"}))
    other = rt.mgpuMemAlloc(8 * KIB, None, False)  # another class: its free drains the device
    reused = fresh = 0
    for i in range(40):
        rt.info.allocator_release()  # p below is then the only block of its class
        p = rt.mgpuMemAlloc(KIB, None, False)
        fill(p, KIB, 0x55)
        rt.mgpuMemFree(p, None)
        q = rt.mgpuMemAlloc(KIB, None, False)
        if q == p:
            reused += 1
            assert words(q, 256) == [0] * 256  # its memset ran before it was handed out
        else:
            fresh += 1
        fill(q, KIB, 0x77)
        rt.mgpuMemFree(other, None)  # cuCtxSynchronize: every deferred memset runs now
        other = rt.mgpuMemAlloc(8 * KIB, None, False)
        assert words(q, 256) == [0x77777777] * 256, i  # no late memset over the new owner
        rt.mgpuMemFree(q, None)
    assert reused and fresh
