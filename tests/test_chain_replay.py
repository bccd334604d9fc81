# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Opt-in chain replay (MGPU_CACHED_CHAIN=1, csrc/launch/chain.c) against the recording fake driver:
launches on a stream of ours are deferred with copies of their argument values and submitted, in
order, before anything that could observe them; a sequence submitted again among the last eight
segments becomes one graph, replayed with only the changed nodes updated. The kernels the fake runs (first argument of
each, in order) must be exactly those of the stream path."""

import ctypes

import pytest

from conftest import GRAPH_EAGER, blob_buffer, overwrite, ptx
from test_graph_launch import Args, launch
from test_graph_launch import kernels as _kernels


def kernels(rt, *names):
    return _kernels(rt, *names, warm=False)  # chains build their own graphs


@pytest.fixture
def crt(make_runtime):
    def make(chain="1", sizes="8,4", **env):
        # chain replay defers launches: only tagged handles make that safe (launch.c)
        e = {"MGPU_CACHED_GRAPH": "1", "MGPU_CACHED_CHAIN": chain, "FAKECUDA_PARAM_SIZES": sizes,
             "MGPU_CACHED_STREAM_HANDLES": "tagged", **GRAPH_EAGER}
        e.update({k: str(v) for k, v in env.items()})
        return make_runtime(env=e)
    return make


def ran(rt):
    return rt.fake.arg_log()


def test_launches_wait_for_the_sync_with_the_values_of_their_launch(crt):
    rt = crt()
    f, = kernels(rt, "k")
    s = rt.mgpuStreamCreate()
    args = Args(0, 0)
    for i in range(1, 4):
        args.a.value = i
        launch(rt, f, s, args)  # the program reuses its argument storage
    args.a.value = 99
    assert ran(rt) == [] and rt.fake.count("cuGraphLaunch") + rt.fake.count("cuLaunchKernel") == 0
    rt.mgpuStreamSynchronize(s)
    assert ran(rt) == [1, 2, 3]
    log = rt.fake.log()
    submitted = [i for i, c in enumerate(log) if c in ("cuGraphLaunch", "cuLaunchKernel")]
    assert len(submitted) == 3 and log.index("cuStreamSynchronize") > max(submitted)
    # the first submission found no one-node exec: cuLaunchKernel, and the exec is made after the
    # chain's lock is released (no cuGraphInstantiate under a lock)
    assert log.index("cuGraphInstantiate") > max(submitted)
    assert rt.stats()["chain_deferred"] == 3 and rt.stats()["launches"] == 3


def test_a_repeated_sequence_becomes_one_graph_launch(crt):
    rt = crt()
    f, g = kernels(rt, "f", "g")
    s = rt.mgpuStreamCreate()
    expect = []
    launches = []
    for rnd in range(6):
        n0 = rt.fake.count("cuGraphLaunch")
        k0 = rt.fake.count("cuLaunchKernel")
        a, b = Args(10 * rnd + 1, 0), Args(12 if rnd == 1 else 2, 0)
        launch(rt, f, s, a)
        launch(rt, g, s, b)
        rt.mgpuStreamSynchronize(s)
        expect += [a.a.value, b.a.value]
        launches.append((rt.fake.count("cuGraphLaunch") - n0, rt.fake.count("cuLaunchKernel") - k0))
    assert ran(rt) == expect  # every kernel ran, in order, with its own values
    # round 1: no one-node execs yet (f's made after it), round 2: f's exec and g by cuLaunchKernel
    # (g's made after it); seen twice: one graph launch per sequence from round 3
    assert launches == [(0, 2), (1, 1), (1, 0), (1, 0), (1, 0), (1, 0)]
    st = rt.stats()
    assert st["chain_instantiates"] == 1 and st["chain_replays"] == 4
    # the graph was made from round 2's launches: f's node is updated in every replay, g's only
    # in the first (its value went back from 12 to 2, then stayed)
    assert st["chain_node_updates"] == 4 + 1
    assert st["graph_instantiates"] == 2  # f's and g's one-node execs


def test_same_sequence_with_same_values_updates_nothing(crt):
    rt = crt()
    f, g = kernels(rt, "f", "g")
    s = rt.mgpuStreamCreate()
    for _ in range(5):
        launch(rt, f, s, Args(1, 1))
        launch(rt, g, s, Args(2, 2))
        rt.mgpuStreamSynchronize(s)
    assert ran(rt) == [1, 2] * 5
    assert rt.fake.count("cuGraphExecKernelNodeSetParams") == 0
    assert rt.stats()["chain_replays"] == 3


def _op_streams(rt, f):
    s = rt.mgpuStreamCreate()
    return s


OBSERVERS = {
    "mgpuStreamSynchronize": (lambda rt, s, aux: rt.mgpuStreamSynchronize(s), "cuStreamSynchronize"),
    "mgpuEventRecord": (lambda rt, s, aux: rt.mgpuEventRecord(aux["e"], s), "cuEventRecord"),
    "mgpuStreamWaitEvent": (lambda rt, s, aux: rt.mgpuStreamWaitEvent(aux["t"], aux["e"]), None),
    "mgpuEventSynchronize": (lambda rt, s, aux: rt.mgpuEventSynchronize(aux["e"]), None),
    "mgpuMemcpy": (lambda rt, s, aux: rt.mgpuMemcpy(aux["d"], aux["h"], 8, s), "cuMemcpyAsync"),
    "mgpuMemset32": (lambda rt, s, aux: rt.mgpuMemset32(aux["d"], 7, 2, s), "cuMemsetD32Async"),
    "mgpuMemset16": (lambda rt, s, aux: rt.mgpuMemset16(aux["d"], 7, 2, s), "cuMemsetD16Async"),
    "mgpuMemAlloc": (lambda rt, s, aux: rt.mgpuMemAlloc(64, s, False), None),
    "mgpuMemFree": (lambda rt, s, aux: rt.mgpuMemFree(aux["d"], s), None),
    "mgpuStreamCreate": (lambda rt, s, aux: rt.mgpuStreamCreate(), None),
    "mgpuStreamDestroy": (lambda rt, s, aux: rt.mgpuStreamDestroy(s), None),
    "mgpuEventCreate": (lambda rt, s, aux: rt.mgpuEventCreate(), None),
    "mgpuEventDestroy": (lambda rt, s, aux: rt.mgpuEventDestroy(aux["e"]), None),
    "mgpuMemHostRegister": (lambda rt, s, aux: rt.mgpuMemHostRegister(aux["h"], 8), None),
    "launch on another stream": (lambda rt, s, aux: launch(rt, aux["g"], aux["t"], Args(50, 0)),
                                 None),
    "launch on the NULL stream": (lambda rt, s, aux: launch(rt, aux["g"], None, Args(50, 0)),
                                  "cuLaunchKernel"),
    "cooperative launch": (lambda rt, s, aux: rt.lib.mgpuLaunchKernelCooperative(
        aux["g"], 1, 1, 1, 32, 1, 1, 0, 0, 0, 0, s, Args(50, 0).ptrs, None), "cuLaunchKernelEx"),
    "launch with extra": (lambda rt, s, aux: launch(rt, aux["g"], s, None,
                                                    extra=(ctypes.c_void_p * 1)(None)),
                          "cuLaunchKernel"),
    "mgpu_cached_driver_handle": (lambda rt, s, aux: rt.pin(s), None),
}


@pytest.mark.parametrize("name", list(OBSERVERS))
def test_every_observation_point_submits_pending_launches_first(crt, name):
    rt = crt()
    f, g = kernels(rt, "f", "g")
    m = rt.mgpuModuleLoad(blob_buffer(ptx("u")), 0)
    s, t = rt.mgpuStreamCreate(), rt.mgpuStreamCreate()
    e = rt.mgpuEventCreate()
    d = rt.mgpuMemAlloc(64, None, False)
    h = ctypes.create_string_buffer(64)
    aux = {"e": e, "t": t, "d": d, "h": ctypes.addressof(h), "m": m, "g": g}
    launch(rt, f, s, Args(1, 0))
    launch(rt, f, s, Args(2, 0))
    assert ran(rt) == []
    op, driver_call = OBSERVERS[name]
    n_log = len(rt.fake.log())
    op(rt, s, aux)
    assert ran(rt)[:2] == [1, 2], name  # submitted, in order, before the operation's own work
    log = rt.fake.log()[n_log:]
    if driver_call:
        submitted = [i for i, c in enumerate(log) if c in ("cuGraphLaunch", "cuLaunchKernel")][:2]
        assert driver_call in log and len(submitted) == 2
        assert max(submitted) < len(log) - 1 - log[::-1].index(driver_call), log
    assert rt.stats()["chain_flushes"] >= 1


def test_module_lookups_unloads_and_same_stream_launches_do_not_flush(crt):
    rt = crt()
    f, = kernels(rt, "f")
    s = rt.mgpuStreamCreate()
    launch(rt, f, s, Args(1, 0))
    m = rt.mgpuModuleLoad(blob_buffer(ptx("x")), 0)
    rt.mgpuModuleGetFunction(m, b"x")
    rt.mgpuModuleUnload(m)  # stays cached: no driver call, nothing observed
    launch(rt, f, s, Args(2, 0))
    assert ran(rt) == [] and "cuModuleUnload" not in rt.fake.log()
    rt.mgpuStreamSynchronize(s)
    assert ran(rt) == [1, 2]


def _llvm19_chain(rt, buf, s, k, first):
    """K launches as LLVM <= 20 code makes them (load, look-up, launch, unload each), one sync."""
    for i in range(k):
        m = rt.mgpuModuleLoad(buf, 0)
        f = rt.mgpuModuleGetFunction(m, b"f")
        launch(rt, f, s, Args(first + i, 0))
        rt.mgpuModuleUnload(m)
    rt.mgpuStreamSynchronize(s)


@pytest.mark.parametrize("k", [10, 100])
def test_llvm19_code_chains_become_one_graph_launch(crt, k):
    """Issue 21 item 2: the per-launch mgpuModuleLoad / mgpuModuleUnload of LLVM <= 20 code (a
    cache hit, an unload that keeps the module) do not end a chain: once its graphs exist, a chain
    of K launches and its sync are one cuGraphLaunch and the sync, no other driver call; a chain
    of 100 (after a chain of at least 32 on its stream) three: its head of 16, submitted at its
    16th launch, the next 32 at its 48th, and the rest."""
    rt = crt()
    buf = blob_buffer(ptx("f"))
    s = rt.mgpuStreamCreate()
    expect = []
    for c in range(3):
        _llvm19_chain(rt, buf, s, k, 1000 * c)
        expect += list(range(1000 * c, 1000 * c + k))
    before = len(rt.fake.log())
    _llvm19_chain(rt, buf, s, k, 5000)
    expect += list(range(5000, 5000 + k))
    log = rt.fake.log()[before:]
    heads = 1 if k >= 32 else 0
    parts = 3 if k >= 32 else 1
    assert [c for c in log if c not in ("cuCtxGetCurrent", "cuCtxPushCurrent",
                                        "cuCtxPopCurrent", "cuGraphExecKernelNodeSetParams",
                                        "cuStreamIsCapturing")] \
        == ["cuGraphLaunch"] * parts + ["cuStreamSynchronize"]
    assert ran(rt) == expect
    st = rt.stats()
    # k = 100: chain 1 is one segment (no long chain before it), chains 2-4 three parts; each
    # part is seen at chain 2, made into a graph at chain 3, replayed at chain 4
    assert st["chain_heads"] == 3 * heads and st["chain_deferred"] == 4 * k
    assert st["chain_flushes"] == 1 + 3 * parts and st["chain_replays"] == (2 if k < 32 else 3)
    assert rt.fake.count("cuModuleLoadData") == 1 and rt.fake.count("cuModuleUnload") == 0


def _kernels_ran_during(rt, step):
    n = len(ran(rt))
    step()
    return ran(rt)[n:]


@pytest.mark.parametrize("k", [31, 32, 40, 300])
def test_a_long_chain_submits_its_head_while_the_host_records_the_rest(crt, k):
    """Head start (chain.c): after a chain of at least 32 launches on a stream, the next chain's
    first 16 launches are submitted at its 16th launch, so the GPU runs them while the host makes
    the rest, and each later part when it holds twice what went before (32, 96, then 128); every
    kernel runs once, in order, with its own values. A chain of 31 never splits, and the first
    chain on a stream never does."""
    rt = crt()
    f, = kernels(rt, "f")
    s = rt.mgpuStreamCreate()
    expect = []
    for c in range(4):
        early = []
        parts = []
        for i in range(k):
            got = _kernels_ran_during(rt, lambda: launch(rt, f, s, Args(1000 * c + i, 0)))
            if got:
                parts.append((i + 1, len(got)))  # (launches made, launches submitted then)
            early += got
        rest = _kernels_ran_during(rt, lambda: rt.mgpuStreamSynchronize(s))
        chain = list(range(1000 * c, 1000 * c + k))
        assert early + rest == chain
        if c and k >= 32:
            want = [(16, 16), (48, 32), (144, 96), (272, 128)]
            assert parts == [p for p in want if p[0] <= k]
        elif k > 128:  # a full segment (128) is submitted at the next launch
            assert parts == [(129, 128), (257, 128)]
        else:
            assert early == []
        expect += chain
    assert ran(rt) == expect
    assert rt.stats()["chain_heads"] == (3 if k >= 32 else 0)


def test_long_chains_make_a_graph_of_each_part(crt):
    """The driver calls of six chains of 100 launches (tests/gpu/test_gpu.py counts the same on
    the GPU): chain 1 one segment by cuLaunchKernel (the one-node exec is made after it); chains 2
    and 3 three parts (16, 32, 52) through the one-node exec (each part seen again at chain 3,
    their graphs made after it); chains 4-6 three replays each."""
    rt = crt()
    f, = kernels(rt, "f")
    s = rt.mgpuStreamCreate()
    for c in range(6):
        for i in range(100):
            launch(rt, f, s, Args(100 * c + i, 0))
        rt.mgpuStreamSynchronize(s)
    assert ran(rt) == [100 * c + i for c in range(6) for i in range(100)]
    assert rt.fake.count("cuLaunchKernel") == 100
    assert rt.fake.count("cuGraphLaunch") == 100 + 100 + 3 * 3
    st = rt.stats()
    assert st["chain_heads"] == 5 and st["chain_instantiates"] == 3 and st["chain_replays"] == 9


def test_a_head_start_follows_the_stream_whose_chain_was_long(crt):
    """The head start is decided per handle: a long chain on one stream does not split a chain on
    another, and a short chain in between ends it."""
    rt = crt()
    f, = kernels(rt, "f")
    s, t = rt.mgpuStreamCreate(), rt.mgpuStreamCreate()

    def chain(stream, k, first):
        early = []
        for i in range(k):
            early += _kernels_ran_during(rt, lambda: launch(rt, f, stream, Args(first + i, 0)))
        rt.mgpuStreamSynchronize(stream)
        return early

    assert chain(s, 40, 0) == []
    assert chain(t, 40, 100) == []  # t's first chain: nothing known of t
    assert chain(t, 40, 200) == list(range(200, 216))
    assert chain(s, 40, 300) == []  # the last chain was t's
    assert chain(s, 20, 400) == list(range(400, 416))  # s's last chain was long: its head goes
    assert chain(s, 40, 500) == []  # after a short one: not
    assert ran(rt) == list(range(0, 40)) + list(range(100, 140)) + list(range(200, 240)) + \
        list(range(300, 340)) + list(range(400, 420)) + list(range(500, 540))


def test_llvm19_chain_checks_the_context_once_per_submission(crt):
    """Issue 21 item 2: a module load while launches are pending owes its context check
    (chain.h) instead of making it: a chain of K LLVM <= 20 launches makes one cuCtxGetId at its
    first load (nothing pending yet) and one before its submission, not K; a chain of 50 after
    one of 50 is three submissions (16 launches at its 16th, 32 at its 48th, 2 at the sync), so
    six."""
    rt = crt()
    buf = blob_buffer(ptx("f"))
    s = rt.mgpuStreamCreate()
    for c in range(3):
        _llvm19_chain(rt, buf, s, 50, 1000 * c)
    before = rt.fake.count("cuCtxGetId")
    _llvm19_chain(rt, buf, s, 50, 5000)
    assert rt.fake.count("cuCtxGetId") - before == 6
    assert ran(rt)[-50:] == list(range(5000, 5050))
    # without chain replay every load checks the context
    rt2 = crt(chain="0")
    s2 = rt2.mgpuStreamCreate()
    _llvm19_chain(rt2, buf, s2, 5, 0)
    before = rt2.fake.count("cuCtxGetId")
    _llvm19_chain(rt2, buf, s2, 50, 0)
    assert rt2.fake.count("cuCtxGetId") - before >= 50


def test_a_reset_during_a_chain_is_found_before_its_submission(crt):
    """A reset primary context while launches are pending (the loads after it owed their check):
    the check made before the submission finds it, nothing is submitted to the dead context
    (its pending launches are dropped, as a check at the load would have dropped them), and the
    next LLVM <= 20 launch on a new stream loads the module again and runs in the new context."""
    rt = crt()
    rt.fake.cuDevicePrimaryCtxReset_v2.argtypes = [ctypes.c_int]
    buf = blob_buffer(ptx("f"))
    s = rt.mgpuStreamCreate()
    _llvm19_chain(rt, buf, s, 3, 0)  # the module is cached
    loads = rt.fake.count("cuModuleLoadData")
    for i in range(3):  # pending, then the reset, then more pending links
        if i == 2:
            assert rt.fake.cuDevicePrimaryCtxReset_v2(0) == 0
        m = rt.mgpuModuleLoad(buf, 0)
        launch(rt, rt.mgpuModuleGetFunction(m, b"f"), s, Args(100 + i, 0))
        rt.mgpuModuleUnload(m)
    submitted = rt.fake.launches()
    assert rt.stats()["context_recoveries"] == 0  # the loads after the reset did not check
    rt.mgpuStreamSynchronize(s)
    assert rt.stats()["context_recoveries"] == 1
    assert rt.fake.launches() == submitted  # nothing went to the dead context
    assert not [v for v in ran(rt) if v >= 100]
    s2 = rt.mgpuStreamCreate()
    _llvm19_chain(rt, buf, s2, 2, 200)
    assert ran(rt)[-2:] == [200, 201]
    assert rt.fake.count("cuModuleLoadData") == loads + 1


def test_unload_of_a_stateful_module_submits_pending_launches_first(crt):
    """A module with state (issue 19 item 1) is unloaded from the driver at its last unload, as
    stock does: launches pending on the stream (of any module) are submitted before the driver
    unload; its own launches were never deferred (the stream path)."""
    rt = crt()
    f, = kernels(rt, "f")
    s = rt.mgpuStreamCreate()
    src = ptx("g", pad=".global .align 4 .u32 counter;\n")
    m = rt.mgpuModuleLoad(blob_buffer(src), 0)
    g = rt.mgpuModuleGetFunction(m, b"g")
    launch(rt, f, s, Args(1, 0))
    launch(rt, f, s, Args(2, 0))
    assert ran(rt) == []
    launch(rt, g, s, Args(3, 0))  # not deferred: what is pending goes first
    assert ran(rt) == [1, 2, 3]
    launch(rt, f, s, Args(4, 0))
    assert ran(rt) == [1, 2, 3]
    rt.mgpuModuleUnload(m)  # the driver unloads it: pending launches go first
    log = rt.fake.log()
    assert ran(rt) == [1, 2, 3, 4]
    assert max(i for i, c in enumerate(log) if c in ("cuGraphLaunch", "cuLaunchKernel")) < \
        log.index("cuModuleUnload")
    assert rt.stats()["module_stateful_loads"] == 1


def test_unload_with_stock_sync_submits_pending_launches_before_its_wait(crt):
    """MGPU_CACHED_STOCK_SYNC=1: mgpuModuleUnload waits for the device as stock's does; the
    launches pending are submitted first, so the wait covers them."""
    rt = crt(MGPU_CACHED_STOCK_SYNC="1")
    f, = kernels(rt, "f")
    s = rt.mgpuStreamCreate()
    m = rt.mgpuModuleLoad(blob_buffer(ptx("x")), 0)
    launch(rt, f, s, Args(1, 0))
    assert ran(rt) == []
    rt.mgpuModuleUnload(m)
    assert ran(rt) == [1]


def test_unknown_argument_sizes_are_not_deferred(crt):
    rt = crt(sizes="unknown")
    f, = kernels(rt, "f")
    s = rt.mgpuStreamCreate()
    launch(rt, f, s, Args(1, 0))  # a function's first launch: the stream path
    launch(rt, f, s, Args(2, 0))  # then the graph path, at once
    assert rt.fake.counts("cuLaunchKernel", "cuGraphLaunch") == {"cuLaunchKernel": 1,
                                                                  "cuGraphLaunch": 1}
    assert rt.stats()["chain_deferred"] == 0


def test_off_by_default_and_results_match_the_stream_path(crt, make_runtime, monkeypatch):
    seqs = {}
    for chain in ("0", "1"):
        rt = crt(chain=chain)
        f, g = kernels(rt, "f", "g")
        s = rt.mgpuStreamCreate()
        for rnd in range(4):
            launch(rt, f, s, Args(rnd, 0))
            launch(rt, g, s, Args(100 + rnd, 0))
            launch(rt, f, s, Args(200 + rnd, 0), grid=(rnd + 1, 1, 1))
            rt.mgpuStreamSynchronize(s)
        seqs[chain] = (ran(rt), rt.stats()["chain_deferred"])
    assert seqs["0"][0] == seqs["1"][0] and len(seqs["0"][0]) == 12
    assert seqs["0"][1] == 0 and seqs["1"][1] == 12
    monkeypatch.delenv("MGPU_CACHED_CHAIN")
    rt = make_runtime(env={"MGPU_CACHED_GRAPH": "1", **GRAPH_EAGER})  # MGPU_CACHED_CHAIN unset
    f, = kernels(rt, "f")
    s = rt.mgpuStreamCreate()
    launch(rt, f, s, Args(3, 0))
    assert rt.fake.count("cuLaunchKernel") == 1 and ran(rt) == [3]  # submitted at once


def test_a_failed_deferred_launch_is_reported_at_the_flush(crt, capfd):
    rt = crt()
    f, = kernels(rt, "f")
    s = rt.mgpuStreamCreate()
    rt.fake.fake_fail(b"cuGraphInstantiate", 999, 0)  # f leaves the graph path (silently)
    launch(rt, f, s, Args(1, 0))
    rt.mgpuStreamSynchronize(s)
    assert capfd.readouterr().err == "" and ran(rt) == [1]
    launch(rt, f, s, Args(2, 0))
    rt.fake.fake_fail(b"cuLaunchKernel", 700, 0)  # the driver refuses the deferred launch
    rt.mgpuStreamSynchronize(s)
    assert capfd.readouterr().err == ("'cuLaunchKernel' failed with 'CUDA_ERROR_ILLEGAL_ADDRESS'\n")
    assert ran(rt) == [1] and rt.stats()["errors"] == 1


def test_a_repeat_launch_of_a_pending_function_makes_no_driver_call(crt):
    """Fast path: a launch of a function already pending on the stream (same dynamic shared
    memory) is appended without any driver call (no context check, push or pop); a new function
    or another shared memory size takes the full path; the values and order stay right."""
    rt = crt()
    f, g = kernels(rt, "f", "g")
    s = rt.mgpuStreamCreate()
    launch(rt, f, s, Args(1, 0))  # full path: starts the segment
    before = len(rt.fake.log())
    for i in range(2, 6):
        launch(rt, f, s, Args(i, 0))
    assert len(rt.fake.log()) == before  # four launches, not one driver call
    launch(rt, g, s, Args(6, 0))  # not pending yet: full path
    assert len(rt.fake.log()) > before
    mid = len(rt.fake.log())
    launch(rt, f, s, Args(7, 0))
    launch(rt, g, s, Args(8, 0))
    assert len(rt.fake.log()) == mid
    launch(rt, f, s, Args(9, 0), smem=64)  # another shared memory size: full path
    assert len(rt.fake.log()) > mid
    rt.mgpuStreamSynchronize(s)
    assert ran(rt) == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert rt.stats()["chain_deferred"] == 9 and rt.stats()["launches"] == 9


def test_a_load_that_unloads_a_cached_module_submits_its_pending_launches_first(crt, capfd):
    """mgpuModuleLoad flushes nothing by itself, but when it replaces a cached module (a different
    blob at its address) the driver unload waits for the pending launches of its kernels to be
    submitted; a later launch through the stale handle is reported, not appended."""
    rt = crt()
    buf = blob_buffer(ptx("f"), 4096)
    m0 = rt.mgpuModuleLoad(buf, 0)
    f = rt.mgpuModuleGetFunction(m0, b"f")
    rt.mgpuModuleUnload(m0)  # kept in the cache, f still usable
    s = rt.mgpuStreamCreate()
    launch(rt, f, s, Args(1, 0))
    launch(rt, f, s, Args(2, 0))
    assert ran(rt) == []
    overwrite(buf, ptx("other"))
    rt.mgpuModuleLoad(buf, 0)  # replaces m0: its kernels' launches go first, then the unload
    assert ran(rt) == [1, 2]
    log = rt.fake.log()
    assert max(i for i, c in enumerate(log) if c in ("cuGraphLaunch", "cuLaunchKernel")) < \
        log.index("cuModuleUnload")
    capfd.readouterr()
    launch(rt, f, s, Args(3, 0))
    assert "'mgpuLaunchKernel' failed with 'MGPU_CACHED_STALE_HANDLE'" in capfd.readouterr().err
    rt.mgpuStreamSynchronize(s)
    assert ran(rt) == [1, 2]


@pytest.mark.parametrize("seed", range(6))
def test_random_programs_run_every_kernel_once_in_program_order(crt, seed):
    """A randomised check of segments, heads, parts and graphs together: chains of 1-300 launches
    of three kernels (a kernel's two arguments varied, dynamic shared memory sometimes) on two
    streams, ended by a sync, an event record or a launch on the other stream, some of them
    LLVM <= 20 style (load / look-up / unload around the launch). The fake must run every kernel
    once, in the order the program launched them (a launch on another stream submits the pending
    ones first), with its own first argument, with chain replay as without it."""
    import random

    def program(rt):
        rnd = random.Random(seed)
        fs = kernels(rt, "f", "g", "h")
        buf = blob_buffer(ptx("f"))
        streams = [rt.mgpuStreamCreate(), rt.mgpuStreamCreate()]
        e = rt.mgpuEventCreate()
        value = 0
        pattern = [rnd.randrange(3) for _ in range(5)]
        for _ in range(40):
            s = streams[rnd.randrange(2)]
            k = rnd.choice([1, 2, 5, 15, 16, 17, 31, 32, 33, 47, 48, 49, 100, 145, 300])
            llvm19 = rnd.random() < 0.3
            for i in range(k):
                value += 1
                smem = 64 if rnd.random() < 0.05 else 0
                if llvm19:
                    m = rt.mgpuModuleLoad(buf, 0)
                    f = rt.mgpuModuleGetFunction(m, b"f")
                    launch(rt, f, s, Args(value, i), smem=smem)
                    rt.mgpuModuleUnload(m)
                else:
                    launch(rt, fs[pattern[i % len(pattern)]], s, Args(value, i), smem=smem)
            end = rnd.randrange(3)
            if end == 0:
                rt.mgpuStreamSynchronize(s)
            elif end == 1:
                rt.mgpuEventRecord(e, s)
            # else: the next chain (maybe on the other stream) goes on or submits these
        for s in streams:
            rt.mgpuStreamSynchronize(s)
        return value

    rt = crt()
    n = program(rt)
    assert ran(rt) == list(range(1, n + 1))
    st = rt.stats()
    assert st["chain_deferred"] == n and st["launches"] == n
    assert st["chain_heads"] > 0  # each seed's program has heads (and, but seed 0, replays)
    assert st["chain_kept_starts"] > 0  # and chains begun on a stream a sync kept
    stock = crt(chain="0")
    assert program(stock) == n and ran(stock) == list(range(1, n + 1))


def test_threads_chaining_on_their_own_streams_keep_each_order(crt):
    """Four threads, each making chains of 40 launches (long enough for a head start) on its own
    stream and waiting for them: one segment is pending at a time, so each thread's launches
    submit the others'; every kernel runs once, and each thread's in the order it launched them."""
    import threading

    rt = crt()
    f, = kernels(rt, "f")
    streams = [rt.mgpuStreamCreate() for _ in range(4)]
    errors = []

    def work(t):
        try:
            for c in range(6):
                for i in range(40):
                    launch(rt, f, streams[t], Args(t * 100000 + c * 100 + i, 0))
                rt.mgpuStreamSynchronize(streams[t])
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    got = ran(rt)
    assert sorted(got) == sorted(t * 100000 + c * 100 + i
                                 for t in range(4) for c in range(6) for i in range(40))
    for t in range(4):
        mine = [v for v in got if v // 100000 == t]
        assert mine == sorted(mine)
    st = rt.stats()
    assert st["chain_deferred"] == 4 * 6 * 40 and st["launches"] == 4 * 6 * 40


def test_a_synchronised_chain_keeps_its_stream_for_the_next_chain(crt):
    """Kept stream (chain.c): after a chain and its own stream's synchronisation, the next chain's
    first launch on that stream, of a kernel of the chain before, is appended with no driver call
    (no capture check, context or stream binding: the synchronisation left the stream bound);
    a chain beginning with another kernel takes the full path; every kernel runs once, in order,
    with its own values."""
    rt = crt()
    f, g, h = kernels(rt, "f", "g", "h")
    s = rt.mgpuStreamCreate()

    def chain(first, k0=f):
        for i, k in enumerate((k0, g, f)):
            launch(rt, k, s, Args(first + i, 0))
    chain(0)
    rt.mgpuStreamSynchronize(s)
    for c in range(1, 4):
        before = len(rt.fake.log())
        chain(10 * c)
        assert rt.fake.log()[before:] == [], c  # not one driver call
        rt.mgpuStreamSynchronize(s)
        rt.mgpuStreamSynchronize(s)  # again, nothing pending: still kept
    before = rt.fake.count("cuStreamIsCapturing")
    chain(40, k0=h)  # h is not in the chain before: the full path
    assert rt.fake.count("cuStreamIsCapturing") == before + 1
    rt.mgpuStreamSynchronize(s)
    assert ran(rt) == [0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32, 40, 41, 42]
    assert rt.stats()["chain_kept_starts"] == 3


LET_GO = [n for n in OBSERVERS if n not in ("mgpuStreamSynchronize", "mgpuStreamDestroy",
                                             "mgpu_cached_driver_handle")]


@pytest.mark.parametrize("name", LET_GO)
def test_every_other_observation_point_lets_the_kept_stream_go(crt, name):
    """Only a chain's launches on the kept stream, module look-ups and unloads, and the stream's
    own synchronisation keep it: after any other observation point the next chain's first launch
    takes the full path again, capture check included (a wait on an event could have joined the
    stream to a capture)."""
    rt = crt()
    f, g = kernels(rt, "f", "g")
    s, t = rt.mgpuStreamCreate(), rt.mgpuStreamCreate()
    e = rt.mgpuEventCreate()
    d = rt.mgpuMemAlloc(64, None, False)
    hbuf = ctypes.create_string_buffer(64)
    aux = {"e": e, "t": t, "d": d, "h": ctypes.addressof(hbuf), "g": g}
    launch(rt, f, s, Args(1, 0))
    rt.mgpuStreamSynchronize(s)  # kept
    OBSERVERS[name][0](rt, s, aux)
    before = rt.fake.count("cuStreamIsCapturing")
    launch(rt, f, s, Args(2, 0))
    assert rt.fake.count("cuStreamIsCapturing") == before + 1, name
    rt.mgpuStreamSynchronize(s)
    assert ran(rt)[0] == 1 and ran(rt)[-1] == 2
    assert rt.stats()["chain_kept_starts"] == 0


def test_a_kept_stream_is_destroyed_as_any_other(crt):
    """The kept stream's use ends when it is destroyed: its driver stream goes back to the pool
    and serves the next stream made (no second cuStreamCreate)."""
    rt = crt()
    f, = kernels(rt, "f")
    s = rt.mgpuStreamCreate()
    launch(rt, f, s, Args(1, 0))
    rt.mgpuStreamSynchronize(s)  # kept
    rt.mgpuStreamDestroy(s)
    s2 = rt.mgpuStreamCreate()
    launch(rt, f, s2, Args(2, 0))
    rt.mgpuStreamSynchronize(s2)
    rt.mgpuStreamDestroy(s2)
    assert ran(rt) == [1, 2] and rt.fake.count("cuStreamCreate") == 1


def test_fork_while_another_thread_chains(tmp_path, fake_driver_build):
    """fork while another thread appends launches to a chain on its kept stream (the chain's lock
    taken at every deferred launch, and by the fork handlers): every child chains launches of its
    own on a new stream and synchronises them (a hung child is killed by its alarm: the test
    fails), and every launch of the parent's thread is deferred (tests/data/modcache/
    chain_fork.c)."""
    import json
    import os
    import subprocess

    import mgpu_cached
    from conftest import DATA, ROOT, compile_program

    exe = compile_program(tmp_path, "chain_fork",
                          (DATA / "modcache" / "chain_fork.c").read_text(),
                          ["-pthread", f"-I{ROOT / 'csrc' / 'include'}",
                           *mgpu_cached.ldflags().split()])
    stats = tmp_path / "stats.json"
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake_driver_build), MGPU_CACHED_GRAPH="1",
               MGPU_CACHED_CHAIN="1", MGPU_CACHED_STREAM_HANDLES="tagged",
               MGPU_CACHED_STATS_FILE=str(stats), **GRAPH_EAGER)
    env.pop("MGPU_CACHED_DISABLE", None)
    p = subprocess.run([str(exe), "60"], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.startswith("ok"), p.stdout + p.stderr[-2000:]
    assert p.stderr == ""  # no call failed, in the parent or in a child
    st = json.loads(stats.read_text())["stats"]  # the parent's (the children _exit)
    assert st["launches"] == st["chain_deferred"] == 2 * 10 + 60 * 30
    assert st["chain_kept_starts"] >= 60 and st["chain_replays"] >= 60 - 2  # from round 3 on
