# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Issue 21 item 3, the allocating async step: a block freed on a stream comes back at the next
step once the program's own synchronisation has made it provably idle, through the allocator's
ordered stream (allocator.c): before the program's wait the pending blocks' fence (an event on
every stream the reclaimer's fence covers) is waited for by the ordered stream, which then clears
them; after the wait a query of the batch's event makes them ready. No device-wide wait, no wait
in the program's thread for anything it did not wait for itself, nothing of another thread's
capture touched. The reclaimer is kept asleep (MGPU_CACHED_ALLOCATOR_RECLAIM_US) where a test
needs the program thread alone to prove the blocks."""

from __future__ import annotations

import ctypes

import pytest

from conftest import blob_buffer, ptx
from test_allocator import device_stuck, foreign_stream, setup_fake, words

KIB = 1024
ASLEEP = {"MGPU_CACHED_ALLOCATOR_RECLAIM_US": "30000000"}  # the reclaimer's rounds: 30 s late


def kernels(rt, *names):
    m = rt.mgpuModuleLoad(blob_buffer(ptx(*names)), 0)
    return [rt.mgpuModuleGetFunction(m, n.encode()) for n in names]


def async_step(rt, fa, fb, fc, s, s2, ev, host_shared=True, size=256 * KIB):
    """The MLIR async step's shape: three buffers allocated, two producers on s and s2 joined by
    an event, a combine on s, the buffers freed on s, then the program's synchronisation."""
    h = [rt.mgpuMemAlloc(size, s, host_shared) for _ in range(3)]
    rt.launch(fa, stream=s)
    rt.launch(fb, stream=s2)
    rt.mgpuEventRecord(ev, s2)
    rt.mgpuStreamWaitEvent(s, ev)
    rt.launch(fc, stream=s)
    for p in h:
        rt.mgpuMemFree(p, s)
    rt.mgpuStreamSynchronize(s)
    return h


@pytest.mark.parametrize("host_shared", [True, False], ids=["host_shared", "device"])
def test_async_step_gets_the_same_blocks_every_step(make_runtime, host_shared):
    rt = setup_fake(make_runtime(env=ASLEEP))
    fa, fb, fc = kernels(rt, "a", "b", "c")
    s, s2, ev = rt.mgpuStreamCreate(), rt.mgpuStreamCreate(), rt.mgpuEventCreate()
    steps = [async_step(rt, fa, fb, fc, s, s2, ev, host_shared) for _ in range(2)]
    rt.fake.fake_reset()
    waits = rt.fake.fake_thread_waits()
    steps += [async_step(rt, fa, fb, fc, s, s2, ev, host_shared) for _ in range(20)]
    # every step after the first gets each buffer's block of the step before
    assert all(h == steps[1] for h in steps[1:]), steps[:4]
    assert len(set(steps[1])) == 3
    counts = rt.fake.counts("cuMemAlloc", "cuMemAllocManaged", "cuMemAllocFromPoolAsync",
                            "cuCtxSynchronize", "cuEventSynchronize", "cuMemsetD32Async",
                            "cuStreamWaitEvent", "cuMemFree")
    assert counts["cuMemAlloc"] == counts["cuMemAllocManaged"] == 0
    assert counts["cuMemAllocFromPoolAsync"] == counts["cuMemFree"] == 0
    assert counts["cuCtxSynchronize"] == 0 and counts["cuEventSynchronize"] == 0
    assert counts["cuMemsetD32Async"] == 3 * 20  # every block cleared, on the ordered stream
    # the program's one wait per step, cuStreamSynchronize, is its only waiting call
    assert rt.fake.fake_thread_waits() - waits == 0
    st = rt.stats()
    assert st["alloc_misses"] == 3 and st["alloc_hits"] == 3 * 21
    assert st["alloc_reclaims"] == 0  # the reclaimer never ran a round


def test_reused_blocks_read_as_zeros(make_runtime):
    rt = setup_fake(make_runtime(env=ASLEEP))
    fa, fb, fc = kernels(rt, "a", "b", "c")
    s, s2, ev = rt.mgpuStreamCreate(), rt.mgpuStreamCreate(), rt.mgpuEventCreate()
    h = [rt.mgpuMemAlloc(4 * KIB, s, True) for _ in range(3)]
    for p in h:
        ctypes.memset(p, 0x55, 4 * KIB)
        rt.mgpuMemFree(p, s)
    rt.mgpuStreamSynchronize(s)
    again = [rt.mgpuMemAlloc(4 * KIB, s, True) for _ in range(3)]
    assert again == h
    assert all(words(p, KIB) == [0] * KIB for p in again)


def test_a_block_still_used_by_another_stream_is_not_handed_out(make_runtime):
    """The program synchronises s, but s2's kernel (which uses the block, never joined into s)
    has not finished: the ordered stream waits for it on the GPU, no thread does, and the block
    stays out of reach until the kernel is done."""
    rt = setup_fake(make_runtime(env=ASLEEP))
    (k,) = kernels(rt, "k")
    s, s2 = rt.mgpuStreamCreate(), rt.mgpuStreamCreate()
    p = rt.mgpuMemAlloc(4 * KIB, s, False)
    rt.fake.fake_set_busy_launches(1)
    rt.launch(k, stream=s2)  # uses p, still running
    rt.fake.fake_set_busy_launches(0)
    rt.mgpuMemFree(p, s)
    waits = rt.fake.fake_thread_waits()
    with device_stuck(rt):  # any wait for s2's kernel in this thread would block here
        rt.mgpuStreamSynchronize(s)
        got = [rt.mgpuMemAlloc(4 * KIB, s, False) for _ in range(3)]
        assert p not in got
        rt.mgpuStreamSynchronize(s)
        assert p not in [rt.mgpuMemAlloc(4 * KIB, s, False)]
    assert rt.fake.fake_thread_waits() == waits
    assert rt.fake.count("cuCtxSynchronize") == 0
    rt.fake.fake_complete(rt.fake.translate(s2))  # the kernel finishes
    # (the recording fake does not pass a finished wait on to the stream waiting for it: a
    # NULL-stream free's device-wide wait, which stock's cuMemFree makes too, proves the block)
    q = rt.mgpuMemAlloc(KIB, None, False)
    rt.mgpuMemFree(q, None)
    assert rt.mgpuMemAlloc(4 * KIB, s, False) == p


def test_foreign_stream_block_waits_for_its_own_event(make_runtime):
    rt = setup_fake(make_runtime(env=ASLEEP))
    (k,) = kernels(rt, "k")
    fs = foreign_stream(rt)
    s = rt.mgpuStreamCreate()
    p = rt.mgpuMemAlloc(4 * KIB, s, False)
    rt.fake.fake_set_busy_launches(1)
    rt.launch(k, stream=fs)  # uses p on the foreign stream, still running
    rt.fake.fake_set_busy_launches(0)
    rt.mgpuMemFree(p, fs)  # an event recorded on fs at the free
    with device_stuck(rt):
        rt.mgpuStreamSynchronize(s)
        assert p not in [rt.mgpuMemAlloc(4 * KIB, s, False)]
    rt.fake.fake_complete(fs)
    q = rt.mgpuMemAlloc(KIB, None, False)  # a device-wide wait proves it (see above)
    rt.mgpuMemFree(q, None)
    assert rt.mgpuMemAlloc(4 * KIB, s, False) == p


def test_no_fence_touches_a_captured_stream(make_runtime):
    """A stream of the library being captured by another thread: the synchronisation hands
    nothing to the ordered stream (no event recorded anywhere), the blocks stay pending."""
    rt = setup_fake(make_runtime(env=ASLEEP))
    begin = rt.fake.lib.cuStreamBeginCapture_v2
    begin.restype, begin.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_int]
    end = rt.fake.lib.cuStreamEndCapture
    end.restype, end.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    s, cs = rt.mgpuStreamCreate(), rt.mgpuStreamCreate()
    p = rt.mgpuMemAlloc(4 * KIB, s, False)
    rt.mgpuMemFree(p, s)
    rt.fake.fake_set_current_context(rt.fake.fake_primary_context(0))
    assert begin(cs, 2) == 0  # relaxed mode, this thread
    rt.fake.fake_set_current_context(None)
    rt.fake.fake_reset()
    rt.mgpuStreamSynchronize(s)
    assert rt.fake.count("cuEventRecord") == 0 and rt.fake.count("cuStreamWaitEvent") == 0
    assert rt.stats()["alloc_bytes_pending"] == 4 * KIB
    g = ctypes.c_void_p()
    rt.fake.fake_set_current_context(rt.fake.fake_primary_context(0))
    assert end(cs, ctypes.byref(g)) == 0
    rt.fake.fake_set_current_context(None)
    rt.mgpuStreamSynchronize(s)
    assert rt.mgpuMemAlloc(4 * KIB, s, False) == p


def test_event_synchronisation_proves_too(make_runtime):
    rt = setup_fake(make_runtime(env=ASLEEP))
    s, ev = rt.mgpuStreamCreate(), rt.mgpuEventCreate()
    p = rt.mgpuMemAlloc(4 * KIB, s, False)
    rt.mgpuMemFree(p, s)
    rt.mgpuEventRecord(ev, s)
    rt.mgpuEventSynchronize(ev)
    assert rt.mgpuMemAlloc(4 * KIB, s, False) == p


def test_nothing_pending_adds_no_driver_call_to_a_synchronisation(rt):
    s = rt.mgpuStreamCreate()
    rt.mgpuStreamSynchronize(s)
    rt.fake.fake_reset()
    rt.mgpuStreamSynchronize(s)
    assert rt.fake.log() == ["cuStreamSynchronize"]
