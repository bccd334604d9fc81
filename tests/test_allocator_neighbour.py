"""The caching allocator as a good neighbour (issue 19, items 2, 3 and 7), against the recording
fake driver (tests/drivers/fake_neighbour.h: cuMemGetInfo, memory pools with FAKECUDA_MEMPOOL=1,
a minimal model of capture modes): the reclaimer never calls cuCtxSynchronize and leaves another
library's capture intact (G2); memory goes back without a device-wide wait when an allocation runs
out (G4/R22) and when another CUDA user may need it (the headroom, G9/R23); the public release makes
no device-wide wait; MGPU_CACHED_STOCK_SYNC=1 restores stock's implicit device waits (G8/R24)."""

from __future__ import annotations

import ctypes

import pytest

from conftest import blob_buffer, ptx
from test_allocator import (KIB, busy_kernel, device_stuck, every_size_cached,  # noqa: F401
                            foreign_stream, settle, setup_fake, until)


def runtime(make_runtime, monkeypatch, pool=False, **env):
    if pool:
        monkeypatch.setenv("FAKECUDA_MEMPOOL", "1")
    rt = setup_fake(make_runtime(env={k: str(v) for k, v in env.items()}))
    f = rt.fake.lib
    f.fake_capture_begin.argtypes = [ctypes.c_void_p]
    f.fake_capture_end.restype = ctypes.c_int
    f.fake_pool_reserved.restype = ctypes.c_size_t
    f.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    f.cuMemFree_v2.argtypes = [ctypes.c_uint64]
    return rt


def other_user_alloc(rt, nbytes):
    """Another CUDA user of the process: cuMemAlloc in the primary context."""
    f = rt.fake
    f.fake_set_current_context(f.fake_primary_context(0))
    p = ctypes.c_uint64()
    r = f.lib.cuMemAlloc_v2(ctypes.byref(p), nbytes)
    if r == 0:
        f.lib.cuMemFree_v2(p.value)
    f.fake_set_current_context(None)
    return r


@pytest.mark.parametrize("pool", [False, True], ids=["cuMemAlloc", "pool"])
def test_reclaimer_leaves_another_librarys_capture_intact(make_runtime, monkeypatch, pool):
    """G2: blocks freed on a stream are proven idle while another library captures a stream in
    global mode: no cuCtxSynchronize (it invalidates captures in every mode), every other call of
    the reclaimer in relaxed mode; the capture ends valid and the blocks are reused."""
    rt = runtime(make_runtime, monkeypatch, pool=pool)
    s = rt.mgpuStreamCreate()
    ps = [rt.mgpuMemAlloc(4 * KIB, s, False) for _ in range(2)]
    other = foreign_stream(rt)
    rt.fake.fake_reset()
    rt.fake.lib.fake_capture_begin(other)
    for p in ps:
        rt.mgpuMemFree(p, s)
    settle(rt)
    assert rt.fake.lib.fake_capture_end() == 0  # 901: invalidated
    assert rt.fake.count("cuCtxSynchronize") == 0
    assert rt.stats()["alloc_lost"] == 0
    assert {rt.mgpuMemAlloc(4 * KIB, s, False) for _ in range(2)} == set(ps)


def test_reclaimer_puts_its_round_off_while_a_library_stream_is_captured(make_runtime,
                                                                         monkeypatch):
    """A stream of the library being captured gets no event (it would join the capture): the
    round waits until the capture ended."""
    rt = runtime(make_runtime, monkeypatch)
    s = rt.mgpuStreamCreate()
    p = rt.mgpuMemAlloc(4 * KIB, s, False)
    rt.fake.lib.fake_capture_begin(rt.fake.translate(s))
    rt.mgpuMemFree(p, s)
    until(lambda: rt.stats()["alloc_rounds_deferred"] >= 2, "a deferred round")
    assert rt.stats()["alloc_bytes_pending"] == 4 * KIB
    assert rt.fake.lib.fake_capture_end() == 0
    settle(rt)
    assert rt.mgpuMemAlloc(4 * KIB, None, False) == p


def test_out_of_memory_gives_pool_blocks_back_without_waiting(make_runtime, monkeypatch):
    """G4/R22: 600 KiB freed (NULL stream), then a kernel that waits for the host, then 700 KiB on
    a 1 MiB device: the cached block goes back to the pool and the pool is trimmed in the
    allocating thread, which never waits (before: NULL after the out-of-memory wait)."""
    rt = runtime(make_runtime, monkeypatch, pool=True, MGPU_CACHED_ALLOCATOR_HEADROOM=0,
                 MGPU_CACHED_ALLOCATOR_OOM_WAIT_MS=300)
    rt.fake.fake_set_memory_limit(1 << 20)
    k = busy_kernel(rt)
    s = rt.mgpuStreamCreate()
    a = rt.mgpuMemAlloc(600 * KIB, s, False)
    rt.mgpuMemFree(a, None)
    with device_stuck(rt):
        rt.launch(k, stream=s)
        waits = rt.fake.fake_thread_waits()
        b = rt.mgpuMemAlloc(700 * KIB, s, False)
        assert b is not None
        assert rt.fake.fake_thread_waits() == waits
        assert rt.fake.count("cuMemFree") == 0 and rt.fake.count("cuMemPoolTrimTo") >= 1
        assert rt.stats()["alloc_oom_timeouts"] == 0
    assert rt.fake.lib.fake_pool_reserved() == 0


@pytest.mark.parametrize("pool", [False, True], ids=["cuMemAlloc", "pool"])
def test_headroom_gives_the_cache_back_before_the_device_fills(make_runtime, monkeypatch, pool):
    """G4/R22 and G9/R23 by default: a free that leaves the device's free memory minus the cache
    below a quarter of the device gives the cache back at once (pool: no wait; cuMemAlloc: right
    after the free's own device wait), so a kernel waiting for the host delays nothing and another
    CUDA user of the process finds the memory, as with the stock wrapper."""
    rt = runtime(make_runtime, monkeypatch, pool=pool)
    rt.fake.fake_set_memory_limit(1 << 20)
    k = busy_kernel(rt)
    s = rt.mgpuStreamCreate()
    a = rt.mgpuMemAlloc(600 * KIB, s, False)
    rt.mgpuMemFree(a, None)
    assert rt.fake.fake_memory_used() == 0 and rt.stats()["alloc_bytes_cached"] == 0
    assert other_user_alloc(rt, 700 * KIB) == 0
    with device_stuck(rt):
        rt.launch(k, stream=s)
        waits = rt.fake.fake_thread_waits()
        c = rt.mgpuMemAlloc(700 * KIB, s, False)
        assert c is not None
        assert rt.fake.fake_thread_waits() == waits
    rt.mgpuMemFree(c, None)
    assert rt.fake.fake_memory_used() == 0  # 768 KiB (its class) left too little room: given back
    # small blocks far from the line stay cached
    b = rt.mgpuMemAlloc(4 * KIB, None, False)
    rt.mgpuMemFree(b, None)
    assert rt.stats()["alloc_bytes_cached"] == 4 * KIB


def test_a_reclaimer_round_beside_a_near_capacity_free_never_makes_it_cached(make_runtime,
                                                                             monkeypatch):
    """The free's headroom check counts its own block; a reclaimer round that checks at the same
    moment does not, and finding room it clears the device's lean mark. The free acts on its own
    verdict: near capacity it is the stock free whatever the round wrote meanwhile (before, a free
    read the mark after its check and sometimes cached the block: the flake audit's
    interleaving). The fake's calls sleep at random (FAKECUDA_JITTER_US), so the round runs beside
    the free in many of the repetitions; the earlier code failed within 150 of them in 3 of 3 runs."""
    monkeypatch.setenv("FAKECUDA_JITTER_US", "300")
    monkeypatch.setenv("FAKECUDA_JITTER_ALL", "1")
    for _ in range(150):
        rt = runtime(make_runtime, monkeypatch)
        rt.fake.fake_set_memory_limit(1 << 20)
        s, s2 = rt.mgpuStreamCreate(), rt.mgpuStreamCreate()
        small = rt.mgpuMemAlloc(100 * KIB, s2, False)
        rt.mgpuMemFree(small, s2)  # pending: a reclaimer round starts
        a = rt.mgpuMemAlloc(600 * KIB, s, False)
        lean_before = rt.stats()["alloc_lean_frees"]
        rt.fake.fake_reset()
        rt.mgpuMemFree(a, s)
        assert rt.fake.count("cuCtxSynchronize") == 1  # the stock free's wait, in the caller
        assert rt.stats()["alloc_lean_frees"] == lean_before + 1


@pytest.mark.parametrize("pool", [False, True], ids=["cuMemAlloc", "pool"])
def test_near_capacity_a_stream_free_is_the_stock_free(make_runtime, monkeypatch, pool):
    """G9 for stream frees (the difftest's tight pressure class): below the headroom a free on a
    stream waits for the device in the caller, where the stock cuMemFree waits (one
    cuCtxSynchronize, no other wait), and the block goes back at once with the blocks freed on
    streams before it (here: made ready by a reclaimer round first, so no round runs beside the
    free: a round clearing `small` at that moment holds it until it ends), so another CUDA user
    allocating right after finds the memory. Before: the block stayed pending until a reclaimer
    round proved it idle, and the other user's cuMemAlloc failed when it came first."""
    rt = runtime(make_runtime, monkeypatch, pool=pool)
    rt.fake.fake_set_memory_limit(1 << 20)
    s, s2 = rt.mgpuStreamCreate(), rt.mgpuStreamCreate()
    small = rt.mgpuMemAlloc(100 * KIB, s2, False)
    rt.mgpuMemFree(small, s2)  # far from the line: pending (the reclaimer's)
    settle(rt)
    until(lambda: rt.stats()["alloc_bytes_cached"] > 0, "the reclaimer's round")
    a = rt.mgpuMemAlloc(600 * KIB, s, False)
    rt.fake.fake_reset()
    rt.mgpuMemFree(a, s)
    assert rt.fake.count("cuCtxSynchronize") == 1  # the caller's, as stock's cuMemFree
    assert rt.stats()["alloc_lean_frees"] == 1
    assert rt.fake.fake_memory_used() == 0 and rt.stats()["alloc_bytes_pending"] == 0
    assert other_user_alloc(rt, 1000 * KIB) == 0
    assert rt.fake.fake_frees_while_pending() == 0


def test_near_capacity_a_foreign_stream_free_is_cumemfree(make_runtime, monkeypatch):
    """Below the headroom, a block freed on a stream the library did not create is given back by
    the stock cuMemFree in the caller (no event on that stream)."""
    rt = runtime(make_runtime, monkeypatch)
    rt.fake.fake_set_memory_limit(1 << 20)
    other = foreign_stream(rt)
    a = rt.mgpuMemAlloc(600 * KIB, None, False)
    rt.fake.fake_reset()
    rt.mgpuMemFree(a, other)
    assert rt.fake.count("cuMemFree") == 1 and rt.fake.count("cuEventRecord") == 0
    assert other_user_alloc(rt, 1000 * KIB) == 0


def test_headroom_zero_keeps_the_cache(make_runtime, monkeypatch):
    rt = runtime(make_runtime, monkeypatch, MGPU_CACHED_ALLOCATOR_HEADROOM=0)
    rt.fake.fake_set_memory_limit(1 << 20)
    a = rt.mgpuMemAlloc(600 * KIB, None, False)
    rt.mgpuMemFree(a, None)
    assert rt.stats()["alloc_bytes_cached"] == 640 * KIB  # its size class
    assert rt.fake.count("cuMemGetInfo") == 0


def test_release_makes_no_device_wide_wait(make_runtime, monkeypatch):
    """mgpu_cached_allocator_release (the empty-cache entry point): pool blocks go back at once
    while the device is stuck behind a kernel; pending blocks go back once proven; never
    cuCtxSynchronize."""
    rt = runtime(make_runtime, monkeypatch, pool=True)
    k = busy_kernel(rt)
    s = rt.mgpuStreamCreate()
    a, b = rt.mgpuMemAlloc(4 * KIB, s, False), rt.mgpuMemAlloc(8 * KIB, s, False)
    rt.mgpuMemFree(a, None)
    rt.launch(k, stream=s)
    rt.fake.fake_reset()
    with device_stuck(rt):
        rt.mgpuMemFree(b, s)
        waits = rt.fake.fake_thread_waits()
        assert rt.info.allocator_release() == 1
        assert rt.fake.fake_thread_waits() == waits
        assert rt.stats()["alloc_bytes_cached"] == 0
    settle(rt)
    until(lambda: rt.fake.fake_memory_used() == 0, "the pending block's give-back")
    assert rt.fake.count("cuCtxSynchronize") == 0


def test_block_freed_on_a_foreign_stream_waits_for_that_stream(make_runtime, monkeypatch):
    """A free on a stream the library did not create: an event on that stream at the free; the
    block comes back only once that stream's work before the free finished."""
    rt = runtime(make_runtime, monkeypatch)
    k = busy_kernel(rt)
    b = foreign_stream(rt)
    p = rt.mgpuMemAlloc(4 * KIB, None, False)
    with device_stuck(rt):
        rt.launch(k, stream=b)
        rt.mgpuMemFree(p, b)
        until(lambda: rt.fake.fake_blocked() == 1, "the reclaimer's wait for the event")
        assert rt.mgpuMemAlloc(4 * KIB, None, False) != p
    settle(rt)
    assert rt.mgpuMemAlloc(4 * KIB, None, False) == p
    assert rt.fake.count("cuCtxSynchronize") == 0


@pytest.mark.parametrize("switch", [False, True], ids=["default", "STOCK_SYNC=1"])
def test_stock_sync_switch_restores_stocks_implicit_device_waits(make_runtime, monkeypatch,
                                                                 switch):
    """G8/R24: with MGPU_CACHED_STOCK_SYNC=1, mgpuMemFree with a stream and mgpuModuleUnload wait
    for the device in the caller's thread (cuCtxSynchronize), as stock's cuMemFree /
    cuModuleUnload do; by default they do not (the documented difference)."""
    env = {"MGPU_CACHED_STOCK_SYNC": 1} if switch else {}
    rt = runtime(make_runtime, monkeypatch, **env)
    k = busy_kernel(rt)
    s = rt.mgpuStreamCreate()
    m = rt.mgpuModuleLoad(blob_buffer(ptx("k2")), 0)
    p = rt.mgpuMemAlloc(4 * KIB, s, False)
    rt.launch(k, stream=s)
    c0 = rt.fake.count("cuCtxSynchronize")
    rt.mgpuMemFree(p, s)
    assert rt.fake.count("cuCtxSynchronize") - c0 == (1 if switch else 0)
    rt.launch(k, stream=s)
    c0 = rt.fake.count("cuCtxSynchronize")
    rt.mgpuModuleUnload(m)
    assert rt.fake.count("cuCtxSynchronize") - c0 == (1 if switch else 0)


@pytest.mark.parametrize("handles", ["driver", "tagged"])
def test_block_freed_on_one_stream_waits_for_every_live_library_stream(make_runtime, monkeypatch,
                                                                       handles):
    """Exp0's shape: a kernel on the library's stream B still uses the block when the program frees
    it on stream A. The reclaimer's fence covers every library stream that may have work, with
    driver handles (every stream handed out and not destroyed) as with tagged ones."""
    rt = runtime(make_runtime, monkeypatch, MGPU_CACHED_STREAM_HANDLES=handles)
    k = busy_kernel(rt)
    a, b = rt.mgpuStreamCreate(), rt.mgpuStreamCreate()
    p = rt.mgpuMemAlloc(4 * KIB, None, False)
    with device_stuck(rt):
        rt.launch(k, stream=b)
        rt.mgpuMemFree(p, a)
        until(lambda: rt.fake.fake_blocked() == 1, "the reclaimer's wait for B's event")
        assert rt.mgpuMemAlloc(4 * KIB, None, False) != p  # B's work may still use it
    settle(rt)
    assert rt.mgpuMemAlloc(4 * KIB, None, False) == p
    assert rt.fake.count("cuCtxSynchronize") == 0


def test_driver_allocations_check_the_headroom_when_their_margin_is_used(make_runtime, monkeypatch):
    """A driver allocation asks the free memory (cuMemGetInfo, 6.1 µs on the H100) only when the
    allocations since the last check could have used up the margin that check left, or the
    check is 1 ms old: far from the line, a burst of allocations makes about one check per ms
    (before: one per allocation); near it, the allocation that crosses the margin checks."""
    import time
    rt = runtime(make_runtime, monkeypatch, pool=True)  # 80 GiB: far from the line
    s = rt.mgpuStreamCreate()
    checks = rt.stats()["alloc_headroom_checks"]
    t0 = time.monotonic()
    live = [rt.mgpuMemAlloc(4 * KIB, s, False) for _ in range(200)]
    elapsed_ms = (time.monotonic() - t0) * 1e3
    assert all(live) and len(set(live)) == 200
    made = rt.stats()["alloc_headroom_checks"] - checks
    assert 1 <= made <= 2 + int(elapsed_ms)  # the rate limit, not one per allocation
    for p in live:
        rt.mgpuMemFree(p, s)
    # near the line: 1 MiB device, a quarter kept free; 64 KiB blocks kept live
    rt2 = runtime(make_runtime, monkeypatch, pool=True)
    rt2.fake.fake_set_memory_limit(1 << 20)
    s2 = rt2.mgpuStreamCreate()
    before = rt2.stats()["alloc_headroom_checks"]
    blocks = [rt2.mgpuMemAlloc(64 * KIB, s2, False) for _ in range(13)]
    assert all(blocks)
    # the first allocation checks (margin: 1 MiB - 64 KiB - a quarter of 1 MiB, about 704 KiB);
    # by the thirteenth (12 x 64 KiB = 768 KiB since) it is used up: a check again, however
    # little time went by
    assert rt2.stats()["alloc_headroom_checks"] - before >= 2


def test_near_capacity_allocations_use_cumemalloc_not_the_pool(make_runtime, monkeypatch):
    """The driver's pool reserves physical memory in chunks bigger than a small block (H100: a
    4 KiB pool allocation failed with 16 MiB free, where cuMemAlloc succeeds; the tight pressure
    class of run J). Below the headroom (checked before the first allocation of a device and before
    each while lean) the library allocates with cuMemAlloc, as stock."""
    rt = runtime(make_runtime, monkeypatch, pool=True)
    rt.fake.lib.fake_set_pool_chunk.argtypes = [ctypes.c_size_t]
    rt.fake.fake_set_memory_limit(1 << 20)
    rt.fake.lib.fake_set_pool_chunk(900 * KIB)  # never fits once anything is allocated
    s = rt.mgpuStreamCreate()
    rt.fake.fake_reset()
    a = rt.mgpuMemAlloc(780 * KIB, s, False)  # the first: checked first, lean with it (896 KiB)
    assert a is not None
    assert rt.fake.count("cuMemGetInfo") >= 1 and rt.fake.count("cuMemAllocFromPoolAsync") == 0
    checks = rt.fake.count("cuMemGetInfo")
    b = rt.mgpuMemAlloc(4 * KIB, s, False)  # lean: checked again, cuMemAlloc again
    assert b is not None and rt.fake.count("cuMemGetInfo") > checks
    assert rt.fake.count("cuMemAllocFromPoolAsync") == 0 and rt.fake.count("cuMemAlloc") == 2
    rt.mgpuMemFree(a, s)  # lean: back at once; then room again, so b stays cached
    assert rt.fake.fake_memory_used() == 4 * KIB
    rt.mgpuMemFree(b, s)


def test_a_pool_allocation_out_of_memory_falls_back_to_cumemalloc(make_runtime, monkeypatch):
    rt = runtime(make_runtime, monkeypatch, pool=True, MGPU_CACHED_ALLOCATOR_HEADROOM=0)
    rt.fake.lib.fake_set_pool_chunk.argtypes = [ctypes.c_size_t]
    rt.fake.fake_set_memory_limit(1 << 20)
    rt.fake.lib.fake_set_pool_chunk(1023 * KIB)
    s = rt.mgpuStreamCreate()
    a = rt.mgpuMemAlloc(4 * KIB, s, False)  # fits the pool's chunk
    rt.fake.fake_reset()
    b = rt.mgpuMemAlloc(8 * KIB, s, False)  # the chunk does not fit any more: cuMemAlloc
    assert b is not None
    assert rt.fake.count("cuMemAllocFromPoolAsync") == 1 and rt.fake.count("cuMemAlloc") == 1
    assert rt.stats()["alloc_oom_retries"] == 0
    rt.mgpuMemFree(a, None)
    rt.mgpuMemFree(b, None)
