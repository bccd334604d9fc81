"""Bare launches (MGPU_CACHED_BARE_LAUNCH=1, issue 21's threads; csrc/platform/context.h): a launch
on one of the library's streams, in a thread with no current context, makes one cuCtxGetCurrent and
its cuLaunchKernel, no push and no pop; the thread's current context is the same after every call
as before it. Every other driver call of such a launch (the kernel's first resolution, a shared
memory raise, the graph path) runs with the context pushed; a driver that refuses the bare launch
gets the same launch again, pushed, and no bare launch after it. The fake driver runs a launch on
a stream in the stream's context when none is current (as the CUDA 12 / 13 driver does) and counts
those (fake_bare_launches); FAKECUDA_BARE_REFUSED=1 makes it refuse them."""

import ctypes

from conftest import GRAPH_EAGER, blob_buffer, ptx
from test_call_counts import calls

BARE = {"MGPU_CACHED_BARE_LAUNCH": "1", "MGPU_CACHED_GRAPH": "0"}
PUSH, POP, GET = "cuCtxPushCurrent", "cuCtxPopCurrent", "cuCtxGetCurrent"


def setup(rt, *names):
    rt.fake.fake_bare_launches.restype = ctypes.c_long
    m = rt.mgpuModuleLoad(blob_buffer(ptx(*(names or ("k",)))), 0)
    fns = [rt.mgpuModuleGetFunction(m, n.encode()) for n in (names or ("k",))]
    s = rt.mgpuStreamCreate()
    rt.launch(fns[0], stream=s)  # the first launch: whatever it resolves
    rt.mgpuStreamSynchronize(s)
    return fns, s


def test_a_launch_on_a_library_stream_pushes_no_context(make_runtime):
    rt = make_runtime(env=BARE)
    (f,), s = setup(rt)
    before = rt.fake.fake_bare_launches()
    assert calls(rt, lambda: rt.launch(f, stream=s)) == {GET: 1, "cuLaunchKernel": 1}
    assert rt.fake.fake_bare_launches() == before + 1
    assert rt.fake.fake_current_context() is None  # as before the call
    rt.mgpuStreamSynchronize(s)
    # the default: the stock wrapper's push and pop around the launch, the same kernel launched
    rt2 = make_runtime(env={"MGPU_CACHED_GRAPH": "0", "MGPU_CACHED_BARE_LAUNCH": "0"})
    (f2,), s2 = setup(rt2)
    got = calls(rt2, lambda: rt2.launch(f2, stream=s2))
    assert got.get(PUSH) == got.get(POP) == got.get("cuLaunchKernel") == 1
    assert rt2.fake.fake_bare_launches() == 0
    assert rt.fake.fake_last_function() and rt2.fake.fake_last_function()


def test_a_thread_with_the_primary_context_current_keeps_it(make_runtime):
    rt = make_runtime(env=BARE)
    (f,), s = setup(rt)
    primary = rt.fake.fake_primary_context(0)
    rt.fake.fake_set_current_context(primary)
    before = rt.fake.fake_bare_launches()
    assert calls(rt, lambda: rt.launch(f, stream=s)) == {GET: 1, "cuLaunchKernel": 1}
    assert rt.fake.fake_bare_launches() == before  # it ran in the current context
    assert rt.fake.fake_current_context() == primary
    rt.fake.fake_set_current_context(None)


def test_a_thread_with_another_context_current_gets_the_push_and_keeps_its_own(make_runtime):
    rt = make_runtime(env=BARE)
    (f,), s = setup(rt)
    other = 0x1234  # some other context of the caller's (the fake never dereferences it)
    rt.fake.fake_set_current_context(other)
    before = rt.fake.fake_bare_launches()
    assert calls(rt, lambda: rt.launch(f, stream=s)) == {GET: 1, PUSH: 1, "cuLaunchKernel": 1,
                                                           POP: 1}
    assert rt.fake.fake_bare_launches() == before
    assert rt.fake.fake_current_context() == other
    rt.fake.fake_set_current_context(None)


def test_the_null_stream_and_foreign_streams_are_pushed(make_runtime):
    rt = make_runtime(env=BARE)
    (f,), _ = setup(rt)
    before = rt.fake.fake_bare_launches()
    got = calls(rt, lambda: rt.launch(f, stream=None))
    assert got.get(PUSH) == got.get(POP) == got.get("cuLaunchKernel") == 1
    assert rt.fake.fake_bare_launches() == before
    assert rt.fake.fake_current_context() is None


def test_the_first_resolution_and_a_shared_memory_raise_run_pushed(make_runtime):
    rt = make_runtime(env=dict(BARE, FAKECUDA_CHECK_SMEM="1"))
    rt.fake.fake_bare_launches.restype = ctypes.c_long
    m = rt.mgpuModuleLoad(blob_buffer(ptx("k", "big")), 0)
    big = rt.mgpuModuleGetFunction(m, b"big")
    s = rt.mgpuStreamCreate()
    got = calls(rt, lambda: rt.launch(big, smem=96 << 10, stream=s))
    assert got.get("cuFuncSetAttribute", 0) >= 1  # the raise, made in the pushed context
    assert got.get(PUSH) == got.get(POP) == 1 and got["cuLaunchKernel"] == 1
    assert rt.fake.fake_function_smem_limit(rt.fake.fake_last_function()) >= 96 << 10
    assert rt.fake.fake_current_context() is None
    # the limit now admits it: the next launch goes bare
    before = rt.fake.fake_bare_launches()
    assert calls(rt, lambda: rt.launch(big, smem=96 << 10, stream=s)) == {GET: 1,
                                                                          "cuLaunchKernel": 1}
    assert rt.fake.fake_bare_launches() == before + 1
    rt.mgpuStreamSynchronize(s)


def test_graph_launches_go_bare_and_builds_and_updates_run_pushed(make_runtime):
    """The graph path: the exec's build (cuGraphInstantiate) and a node update run with the context
    pushed (the fake refuses both with none current), the steady launch bare: its capture check,
    the relaxed-mode bracket and cuGraphLaunch."""
    rt = make_runtime(env=dict(GRAPH_EAGER, MGPU_CACHED_BARE_LAUNCH="1"))
    rt.fake.fake_bare_launches.restype = ctypes.c_long
    m = rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0)
    f = rt.mgpuModuleGetFunction(m, b"k")
    s = rt.mgpuStreamCreate()
    log = [calls(rt, lambda: rt.launch(f, stream=s)) for _ in range(4)]
    built = [c for c in log if c.get("cuGraphInstantiate")]
    assert len(built) == 1 and built[0].get(PUSH) == built[0].get(POP) == 1, log
    steady = log[-1]
    assert steady == {GET: 1, "cuStreamIsCapturing": 1, "cuThreadExchangeStreamCaptureMode": 2,
                      "cuGraphLaunch": 1}, log
    before = rt.fake.fake_bare_launches()
    # other grid dimensions: the node is updated, pushed, and the launch goes on the graph path
    got = calls(rt, lambda: rt.launch(f, stream=s, grid=(2, 1, 1)))
    assert got.get("cuGraphExecKernelNodeSetParams") == 1 and got.get(PUSH) == got.get(POP) == 1
    assert got.get("cuGraphLaunch") == 1 and "cuLaunchKernel" not in got
    assert rt.fake.fake_bare_launches() == before  # pushed by then
    assert rt.stats()["graph_launches"] >= 2 and rt.stats()["graph_disabled_functions"] == 0
    assert rt.fake.fake_current_context() is None
    rt.mgpuStreamSynchronize(s)


def test_a_driver_that_refuses_bare_launches_gets_them_pushed(make_runtime, capfd):
    rt = make_runtime(env=dict(BARE, FAKECUDA_BARE_REFUSED="1"))
    rt.fake.fake_bare_launches.restype = ctypes.c_long
    f = rt.mgpuModuleGetFunction(rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0), b"k")
    s = rt.mgpuStreamCreate()
    first = calls(rt, lambda: rt.launch(f, stream=s))
    # refused (CUDA_ERROR_INVALID_CONTEXT), then the same launch pushed
    assert first == {GET: 1, "cuLaunchKernel": 2, PUSH: 1, POP: 1}
    later = calls(rt, lambda: rt.launch(f, stream=s))
    assert later.get(PUSH) == later.get(POP) == later.get("cuLaunchKernel") == 1  # no more tries
    rt.mgpuStreamSynchronize(s)
    assert rt.fake.fake_bare_launches() == 0
    assert "failed" not in capfd.readouterr().err  # nothing reported: every launch ran
    assert rt.fake.fake_current_context() is None


def test_a_driver_that_refuses_bare_graph_launches_keeps_the_graph_path(make_runtime, capfd):
    rt = make_runtime(env={"MGPU_CACHED_GRAPH_AFTER": "1", "MGPU_CACHED_GRAPH_FIRST_AFTER": "0",
                           "MGPU_CACHED_BARE_LAUNCH": "1", "FAKECUDA_BARE_REFUSED": "1"})
    f = rt.mgpuModuleGetFunction(rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0), b"k")
    s = rt.mgpuStreamCreate()
    first = calls(rt, lambda: rt.launch(f, stream=s))  # the exec built (pushed) and launched
    assert first.get("cuGraphInstantiate") == 1 and first.get("cuGraphLaunch") == 1, first
    # the first bare attempt: a graph launch, refused (CUDA_ERROR_INVALID_CONTEXT), then pushed
    second = calls(rt, lambda: rt.launch(f, stream=s))
    assert second.get("cuGraphLaunch") == 2 and second.get(PUSH) == second.get(POP) == 1, second
    assert "cuLaunchKernel" not in second
    later = calls(rt, lambda: rt.launch(f, stream=s))  # pushed from then on
    assert later.get(PUSH) == later.get(POP) == later.get("cuGraphLaunch") == 1, later
    rt.mgpuStreamSynchronize(s)
    st = rt.stats()
    assert st["graph_disabled_functions"] == 0 and st["graph_launches"] >= 2 and st["errors"] == 0
    assert "failed" not in capfd.readouterr().err


# Chain replay (chain.h) in a thread with no current context: the chain's first launch (its
# capture check and deferral) and the replay's cuGraphLaunch push none; a node update, a kernel's
# first argument-size query and a submission launch by launch run pushed.
CHAIN = {"MGPU_CACHED_BARE_LAUNCH": "1", "MGPU_CACHED_GRAPH": "1", "MGPU_CACHED_CHAIN": "1",
         "FAKECUDA_PARAM_SIZES": "8,4", "MGPU_CACHED_STREAM_HANDLES": "tagged", **GRAPH_EAGER}


def _chain_calls(rt, f, s, values):
    from test_graph_launch import Args, launch
    made = calls(rt, lambda: [launch(rt, f, s, Args(v, 0)) for v in values])
    synced = calls(rt, lambda: rt.mgpuStreamSynchronize(s))
    return made, synced


def test_chain_replay_defers_and_replays_bare(make_runtime):
    from test_chain_replay import kernels, ran
    rt = make_runtime(env=CHAIN)
    rt.fake.fake_bare_launches.restype = ctypes.c_long
    f, = kernels(rt, "f")
    s = rt.mgpuStreamCreate()
    first, _ = _chain_calls(rt, f, s, range(10))  # the kernel's argument sizes: asked pushed
    assert first.get("cuFuncGetParamInfo", 0) >= 1 and first.get(PUSH) == first.get(POP) == 1
    for _ in range(2):  # the segment is seen again, its graph made, then replayed
        _chain_calls(rt, f, s, range(10))
    before = rt.fake.fake_bare_launches()
    rt.mgpuEventDestroy(rt.mgpuEventCreate())  # lets the kept stream go (chain.c)
    made, synced = _chain_calls(rt, f, s, range(10))
    assert made == {GET: 1, "cuStreamIsCapturing": 1}, made
    assert synced == {GET: 1, "cuThreadExchangeStreamCaptureMode": 2, "cuGraphLaunch": 1,
                      "cuStreamSynchronize": 1}, synced
    # the replay ran in the stream's context (the fake counts each of its ten nodes)
    assert rt.fake.fake_bare_launches() == before + 10
    # the synchronisation kept the stream: the next chain's launches make no driver call
    made, synced = _chain_calls(rt, f, s, range(10))
    assert made == {} and synced.get("cuGraphLaunch") == 1 and PUSH not in synced, synced
    # other values: the ten nodes are updated with the context pushed, then the same launch
    made, synced = _chain_calls(rt, f, s, range(100, 110))
    assert made == {}, made
    assert synced.get("cuGraphExecKernelNodeSetParams") == 10 and synced.get("cuGraphLaunch") == 1
    assert synced.get(PUSH) == synced.get(POP) == 1 and "cuLaunchKernel" not in synced
    assert ran(rt) == list(range(10)) * 5 + list(range(100, 110))
    assert rt.fake.fake_current_context() is None
    assert rt.stats()["chain_replays"] == 4  # from the third chain on


def test_chain_replay_with_a_driver_that_refuses_bare_launches(make_runtime, capfd):
    from test_chain_replay import kernels, ran
    rt = make_runtime(env=dict(CHAIN, FAKECUDA_BARE_REFUSED="1"))
    rt.fake.fake_bare_launches.restype = ctypes.c_long
    f, = kernels(rt, "f")
    s = rt.mgpuStreamCreate()
    log = [_chain_calls(rt, f, s, range(10))[1] for _ in range(4)]
    # the first replay's cuGraphLaunch is refused (INVALID_CONTEXT), made again pushed; later
    # submissions push at once
    refused = [c for c in log if c.get("cuGraphLaunch") == 2]
    assert len(refused) == 1 and refused[0].get(PUSH) == 1, log
    assert log[-1].get("cuGraphLaunch") == 1 and log[-1].get(PUSH) == 1, log
    assert ran(rt) == list(range(10)) * 4
    assert rt.fake.fake_bare_launches() == 0
    assert "failed" not in capfd.readouterr().err
    assert rt.fake.fake_current_context() is None
