"""Small device allocations on the NULL stream (MLIR's synchronous gpu.alloc / gpu.dealloc) are the
stock driver calls, never cached (MGPU_CACHED_ALLOCATOR_SYNC_DIRECT_MAX, default 1 MiB; issue 21
item 3): their free waits for the device either way, and the driver's pair costs less than
clearing a reused block. Against the recording fake driver, compared with the stock behaviour
(MGPU_CACHED_DISABLE=1): the same driver calls in the same order; larger blocks, blocks allocated on
a stream and host_shared blocks are cached as before."""

from __future__ import annotations

import ctypes

import pytest

from conftest import ptx
from test_allocator import KIB, settle, setup_fake

PAIR_CALLS = ("cuMemAlloc", "cuMemFree", "cuMemAllocManaged", "cuCtxSynchronize",
              "cuMemsetD32Async", "cuMemAllocFromPoolAsync", "cuMemFreeAsync",
              "cuCtxPushCurrent", "cuCtxPopCurrent")
STOCK_PAIR = ["cuCtxPushCurrent", "cuMemAlloc", "cuCtxPopCurrent", "cuMemFree"]


def pairs(rt, nbytes, n=3, host_shared=False, stream=None, use=False):
    """n alloc + free pairs after a warm-up pair; the driver calls they made, in order. With use,
    each block gets a memset of its first word before its free (a host_shared block that no work
    of the library touched is freed as stock frees it)."""
    p = rt.mgpuMemAlloc(nbytes, stream, host_shared)
    if use:
        rt.mgpuMemset32(p, 0, 1, stream)
    rt.mgpuMemFree(p, stream)
    rt.fake.fake_reset()
    got = []
    for _ in range(n):
        p = rt.mgpuMemAlloc(nbytes, stream, host_shared)
        assert p
        got.append(p)
        if use:
            rt.mgpuMemset32(p, 0, 1, stream)
        rt.mgpuMemFree(p, stream)
    return got, [c for c in rt.fake.log() if c in PAIR_CALLS]


@pytest.mark.parametrize("nbytes", [256, 4 * KIB, 64 * KIB, 1024 * KIB])
def test_small_null_stream_pairs_make_the_stock_calls(make_runtime, nbytes):
    stock = make_runtime(disable=True)
    _, stock_calls = pairs(stock, nbytes)
    rt = make_runtime()
    _, calls = pairs(rt, nbytes)
    assert stock_calls == STOCK_PAIR * 3  # the free enters no context: its pointer names one
    assert calls == stock_calls
    st = rt.stats()
    assert st["alloc_sync_direct"] == 4 and st["alloc_hits"] == 0 and st["alloc_misses"] == 0


def test_larger_blocks_stay_cached(make_runtime):
    """One byte above the limit: the cached pair (a NULL-stream free waits for the device and
    clears the block; the allocations after the first take cached blocks)."""
    rt = make_runtime()
    _, calls = pairs(rt, 1024 * KIB + 1)
    assert "cuMemFree" not in calls and calls.count("cuCtxSynchronize") == 3
    assert calls.count("cuMemsetD32Async") == 3  # the clearing of each freed block
    st = rt.stats()
    assert st["alloc_sync_direct"] == 0 and st["alloc_hits"] == 3


@pytest.mark.parametrize("limit,direct,cached", [("1K", 1024, 1025), ("0", None, 256)])
def test_the_limit_is_configurable(make_runtime, limit, direct, cached):
    rt = make_runtime(env={"MGPU_CACHED_ALLOCATOR_SYNC_DIRECT_MAX": limit})
    if direct is not None:
        _, calls = pairs(rt, direct)
        assert calls == STOCK_PAIR * 3
    before = rt.stats()["alloc_sync_direct"]
    ptrs, calls = pairs(rt, cached)
    assert "cuMemFree" not in calls and len(set(ptrs)) < 3  # cached blocks take turns
    assert rt.stats()["alloc_sync_direct"] == before


def test_stream_and_host_shared_allocations_stay_cached(make_runtime):
    rt = make_runtime()
    s = rt.mgpuStreamCreate()
    p = rt.mgpuMemAlloc(256, s, False)  # on a stream: the allocating async step's blocks
    rt.mgpuMemFree(p, s)
    settle(rt)
    assert rt.mgpuMemAlloc(256, s, False) == p
    _, calls = pairs(rt, 256, host_shared=True, use=True)  # host_shared, NULL stream, used
    assert "cuMemFree" not in calls and "cuMemAllocManaged" not in calls
    assert rt.stats()["alloc_sync_direct"] == 0
    rt.mgpuStreamDestroy(s)


def test_a_direct_block_freed_on_a_stream_is_the_stock_free(make_runtime):
    """The allocator never saw the block: its free is stock's cuMemFree, whatever the stream."""
    rt = make_runtime()
    s = rt.mgpuStreamCreate()
    p = rt.mgpuMemAlloc(256, None, False)
    rt.fake.fake_reset()
    rt.mgpuMemFree(p, s)
    assert rt.fake.count("cuMemFree") == 1
    assert rt.stats()["alloc_bytes_pending"] == 0
    rt.mgpuStreamDestroy(s)


def test_memory_the_cache_keeps_never_makes_a_direct_allocation_fail(make_runtime):
    """Near the device's capacity a direct allocation that runs out of memory gets the cache given
    back first and succeeds, as stock's does (stock keeps nothing)."""
    rt = setup_fake(make_runtime())
    big = rt.mgpuMemAlloc(1900 * KIB, None, False)  # cached: above the limit
    rt.mgpuMemFree(big, None)
    kept = rt.fake.fake_memory_used()
    assert kept >= 1900 * KIB and rt.stats()["alloc_bytes_cached"] == kept
    rt.fake.fake_set_memory_limit(kept + 32 * KIB)
    rt.fake.fake_reset()
    p = rt.mgpuMemAlloc(64 * KIB, None, False)
    assert p and rt.fake.count("cuMemAlloc") == 2  # out of memory, then after the release
    st = rt.stats()
    assert st["alloc_oom_retries"] == 1 and st["alloc_bytes_cached"] == 0
    rt.mgpuMemFree(p, None)
    assert rt.fake.fake_memory_used() == 0


def test_a_sticky_error_of_a_direct_free_is_blamed_on_the_threads_device(make_runtime, capfd):
    """The direct free enters no context (as stock's); a sticky error it reports marks the
    thread's device broken (where the block was made), not the device this thread last entered
    for another call: that one keeps working. (Stock's own two-device behaviour differs anyway:
    its context is the one of the device first used, frozen.)"""
    rt = make_runtime(devices=2)
    blob = ctypes.create_string_buffer(ptx("k"))
    rt.mgpuSetDefaultDevice(1)
    s1 = rt.mgpuStreamCreate()
    m1 = rt.mgpuModuleLoad(blob, len(blob))
    q = rt.mgpuMemAlloc(1 << 20, s1, False)
    rt.mgpuSetDefaultDevice(0)
    m0 = rt.mgpuModuleLoad(blob, len(blob))
    p = rt.mgpuMemAlloc(256, None, False)  # direct, on device 0
    rt.mgpuMemset32(q, 0, 16, s1)  # the last context entered: device 1's
    rt.fake.fake_set_sticky(0, 710)  # a device-side assert on device 0
    rt.mgpuMemFree(p, None)
    assert "'cuMemFree' failed with 'CUDA_ERROR_ASSERT'" in capfd.readouterr().err
    rt.mgpuSetDefaultDevice(1)
    assert rt.mgpuModuleGetFunction(m1, b"k")  # device 1 is fine
    rt.mgpuSetDefaultDevice(0)
    assert not rt.mgpuModuleGetFunction(m0, b"k")  # device 0 reports, as stock's call does
    assert "'cuModuleGetFunction' failed with 'CUDA_ERROR_ASSERT'" in capfd.readouterr().err


def test_out_of_memory_with_nothing_cached_is_stocks_single_call(make_runtime, capfd):
    rt = setup_fake(make_runtime())
    rt.fake.fake_set_memory_limit(16 * KIB)
    rt.fake.fake_reset()
    assert not rt.mgpuMemAlloc(64 * KIB, None, False)
    assert rt.fake.count("cuMemAlloc") == 1  # nothing given back: no second call
    assert "'cuMemAlloc' failed with 'CUDA_ERROR_OUT_OF_MEMORY'" in capfd.readouterr().err
    st = rt.stats()
    assert st["alloc_oom_retries"] == 0 and st["alloc_sync_direct"] == 0


# ---- host_shared blocks nothing touched (issue 21 item 3) ---------------------------------------

HS_CALLS = ("cuMemAllocManaged", "cuMemFree", "cuCtxSynchronize", "cuMemsetD32Async")


@pytest.mark.parametrize("disable", [False, True], ids=["cached", "stock"])
def test_an_untouched_host_shared_pair_is_the_stock_pair(make_runtime, disable):
    """alloc(host_shared) + free(NULL) with nothing between: the stock cuMemAllocManaged +
    cuMemFree, also in cached mode (keeping the block would clear it on the device: 1.8x stock's
    pair on the H100 up to 512 KiB, run N5), whatever the size; and no headroom check (a managed
    allocation checks only while the cache holds blocks or the device is lean: cuMemGetInfo, 5-8 µs
    on the H100, was asked once a millisecond by such a loop)."""
    rt = make_runtime(disable=disable)
    for nbytes in (256, 64 * KIB, 16 << 20):
        rt.mgpuMemFree(rt.mgpuMemAlloc(nbytes, None, True), None)
        rt.fake.fake_reset()
        for _ in range(3):
            rt.mgpuMemFree(rt.mgpuMemAlloc(nbytes, None, True), None)
        assert rt.fake.counts(*HS_CALLS, "cuMemGetInfo") == {
            "cuMemAllocManaged": 3, "cuMemFree": 3, "cuCtxSynchronize": 0, "cuMemsetD32Async": 0,
            "cuMemGetInfo": 0}
    if not disable:
        assert rt.stats()["alloc_untouched_frees"] == 12
        assert rt.stats()["alloc_bytes_cached"] == 0


def test_a_host_shared_allocation_checks_the_headroom_only_while_the_cache_holds_blocks(
        make_runtime):
    """A managed driver allocation whose check is due (the last one over 1 ms old) asks the free
    memory only while the cache holds a block it could give back."""
    import time
    rt = make_runtime()
    p = rt.mgpuMemAlloc(4 * KIB, None, True)
    rt.mgpuMemset32(p, 1, 1, None)
    rt.mgpuMemFree(p, None)  # touched: kept (cleared), checked counting the block
    settle(rt)
    assert rt.stats()["alloc_bytes_cached"] > 0 and rt.stats()["alloc_headroom_checks"] >= 1
    time.sleep(0.005)  # the check is due again
    rt.fake.fake_reset()
    q = rt.mgpuMemAlloc(64 * KIB, None, True)  # another class: a driver allocation
    assert rt.fake.counts("cuMemAllocManaged", "cuMemGetInfo") == {"cuMemAllocManaged": 1,
                                                                   "cuMemGetInfo": 1}
    rt.mgpuMemFree(q, None)  # untouched: the stock free
    rt2 = make_runtime()  # nothing kept
    rt2.mgpuMemFree(rt2.mgpuMemAlloc(4 * KIB, None, True), None)
    time.sleep(0.005)
    rt2.fake.fake_reset()
    assert rt2.mgpuMemAlloc(64 * KIB, None, True)
    assert rt2.fake.counts("cuMemAllocManaged", "cuMemGetInfo") == {"cuMemAllocManaged": 1,
                                                                    "cuMemGetInfo": 0}
    assert rt2.stats()["alloc_headroom_checks"] == 0


@pytest.mark.parametrize("work", ["launch", "memcpy", "memset", "launch in another thread"])
def test_work_between_alloc_and_free_keeps_the_host_shared_block(make_runtime, work):
    """Any kernel, copy or memset the library was asked for after the allocation (by any thread
    that the free is ordered after) may have touched the block: it is cached and cleared, as
    before."""
    import threading
    rt = make_runtime()
    m = rt.mgpuModuleLoad(ptx("k"), 0)
    f = rt.mgpuModuleGetFunction(m, b"k")
    other = rt.mgpuMemAlloc(4 * KIB, None, False)
    p = rt.mgpuMemAlloc(4 * KIB, None, True)
    if work == "launch":
        rt.launch(f)
    elif work == "memcpy":
        rt.mgpuMemcpy(other, p, 16, None)
    elif work == "memset":
        rt.mgpuMemset32(other, 1, 4, None)
    else:
        t = threading.Thread(target=rt.launch, args=(f,))
        t.start()
        t.join()
    rt.fake.fake_reset()
    rt.mgpuMemFree(p, None)
    assert rt.fake.counts("cuMemFree", "cuMemsetD32Async") == {"cuMemFree": 0,
                                                               "cuMemsetD32Async": 1}
    assert rt.stats()["alloc_untouched_frees"] == 0
    settle(rt)
    assert rt.mgpuMemAlloc(4 * KIB, None, True) == p


def test_a_host_shared_block_from_the_cache_freed_untouched_goes_back_to_the_driver(make_runtime):
    """A block handed out again from the cache, freed with the NULL stream and no work between,
    is given back with the stock cuMemFree instead of being kept and cleared again; the class's
    next allocation then comes from the driver, untouched, so a loop of such pairs settles on the
    stock pair (kept, every pair took the block kept last time and cleared it again: 1.48x stock
    on the H100 at 256 B, run N101). Work between the hand-out and the free still keeps it."""
    rt = make_runtime()
    p = rt.mgpuMemAlloc(4 * KIB, None, True)
    rt.mgpuMemset32(p, 1, 1, None)
    rt.mgpuMemFree(p, None)  # touched: kept and cleared
    settle(rt)
    q = rt.mgpuMemAlloc(4 * KIB, None, True)
    assert q == p and rt.stats()["alloc_hits"] == 1
    rt.fake.fake_reset()
    rt.mgpuMemFree(q, None)
    assert rt.fake.counts(*HS_CALLS) == {"cuMemAllocManaged": 0, "cuMemFree": 1,
                                         "cuCtxSynchronize": 0, "cuMemsetD32Async": 0}
    assert rt.stats()["alloc_untouched_frees"] == 1 and rt.stats()["alloc_bytes_cached"] == 0
    rt.fake.fake_reset()
    for _ in range(3):  # the stock pair from now on
        rt.mgpuMemFree(rt.mgpuMemAlloc(4 * KIB, None, True), None)
    assert rt.fake.counts(*HS_CALLS) == {"cuMemAllocManaged": 3, "cuMemFree": 3,
                                         "cuCtxSynchronize": 0, "cuMemsetD32Async": 0}
    # work after the hand-out of a cached block: kept and cleared, as before
    r = rt.mgpuMemAlloc(4 * KIB, None, True)
    rt.mgpuMemset32(r, 1, 1, None)
    rt.mgpuMemFree(r, None)
    settle(rt)
    s_ = rt.mgpuMemAlloc(4 * KIB, None, True)
    assert s_ == r
    rt.mgpuMemset32(s_, 2, 1, None)
    rt.fake.fake_reset()
    rt.mgpuMemFree(s_, None)
    assert rt.fake.counts("cuMemFree", "cuMemsetD32Async") == {"cuMemFree": 0,
                                                               "cuMemsetD32Async": 1}


def test_an_untouched_free_charges_its_error_to_the_blocks_device(make_runtime):
    """The stock cuMemFree of an untouched block enters no context; a sticky error it returns is
    about the block's device, not about the device this thread entered last (review of the
    change: device 0, healthy, refused its function look-ups afterwards)."""
    rt = make_runtime(devices=2)
    rt.mgpuSetDefaultDevice(1)
    p = rt.mgpuMemAlloc(4 * KIB, None, True)  # device 1, untouched
    rt.mgpuSetDefaultDevice(0)
    m0 = rt.mgpuModuleLoad(ptx("k"), 0)  # this thread enters device 0 last
    rt.fake.fake_set_sticky(1, 700)  # device 1's context: an illegal address
    rt.mgpuMemFree(p, None)
    assert rt.stats()["alloc_untouched_frees"] == 1
    assert rt.mgpuModuleGetFunction(m0, b"k")  # device 0 is healthy
