"""Issue 19, the 3% rule: the driver calls each stream and event entry point makes in the steady
state of the sequences MLIR code repeats (driver handles, the default), pinned call by call, so a
regression fails here before it costs time on a GPU.

The library's own part of a sequence: mgpuStreamDestroy / mgpuEventDestroy make no driver call
(the object is parked, pool.c); the synchronisation after them polls it (one cuStreamQuery /
cuEventQuery in relaxed capture mode, before the wait: the thread waits for the device there
anyway); mgpuStreamCreate / mgpuEventCreate take it without a driver call but the context check
(one cuCtxGetId, context.h). The counts cover every entry point of the symbol table
(csrc/platform/cuda_api.h), those the fake's call log leaves out included.

That steady state is the one after a device's first MGPU_CACHED_POOL_SPARE_AFTER creates of a kind
(default 32; those poll the object given back instead of making a second one beside it): the tests that pin it set the knob to 0 (STEADY), and
test_the_first_creates_poll_the_parked_stream_then_a_spare_takes_turns pins the default's two
phases."""

import ctypes
import re
import threading

import pytest

from conftest import GRAPH_EAGER, ROOT, blob_buffer, ptx, until

vp = ctypes.c_void_p
FIELDS = re.findall(r"^\s*X\((\w+),", (ROOT / "csrc/platform/cuda_api.h").read_text(), re.M)
EXCHANGE = "cuThreadExchangeStreamCaptureMode"
STEADY = {"MGPU_CACHED_POOL_SPARE_AFTER": "0"}  # the spare from a device's first take on
SPARE_AFTER = 32  # the knob's default (csrc/support/config.h)


def calls(rt, fn) -> dict:
    """The driver calls `fn()` makes: {entry point: count}, nonzero only."""
    rt.fake.fake_reset()
    fn()
    return {f: n for f in FIELDS if (n := rt.fake.count(f))}


def module(rt, *names):
    m = rt.mgpuModuleLoad(blob_buffer(ptx(*names)), 0)
    return [rt.mgpuModuleGetFunction(m, n.encode()) for n in names]


def test_symbol_table_is_parsed():
    assert len(FIELDS) > 50 and "cuStreamQuery" in FIELDS and EXCHANGE in FIELDS


def llvm19_iteration(rt, buf, log):
    """One launch as LLVM <= 20 code makes it: load, resolve, stream, launch, sync, destroy,
    unload; the driver calls of each step appended to `log`."""
    out = {}
    out["load"] = calls(rt, lambda: out.__setitem__("m", rt.mgpuModuleLoad(buf, 0)))
    out["get"] = calls(rt, lambda: out.__setitem__("f", rt.mgpuModuleGetFunction(out["m"], b"k")))
    out["create"] = calls(rt, lambda: out.__setitem__("s", rt.mgpuStreamCreate()))
    out["launch"] = calls(rt, lambda: rt.launch(out["f"], stream=out["s"]))
    out["sync"] = calls(rt, lambda: rt.mgpuStreamSynchronize(out["s"]))
    out["sync_log"] = rt.fake.log()
    out["destroy"] = calls(rt, lambda: rt.mgpuStreamDestroy(out["s"]))
    out["unload"] = calls(rt, lambda: rt.mgpuModuleUnload(out["m"]))
    log.append(out)


@pytest.mark.parametrize("graph", ["0", "1"])
def test_llvm19_launch_sequence_driver_calls(make_runtime, graph):
    rt = make_runtime(env={"MGPU_CACHED_GRAPH": graph, **STEADY, **GRAPH_EAGER})
    buf = blob_buffer(ptx("k"))
    log = []
    for _ in range(6):
        llvm19_iteration(rt, buf, log)
    # the steady state: two driver streams take turns (graph path: the function's first launch
    # took the stream path, so the exec of the first stream is built at the third iteration)
    for it in log[3:]:
        assert it["load"] == {"cuCtxGetId": 1}  # a module cache hit: the context check only
        assert it["get"] == {}
        assert it["create"] == {"cuCtxGetId": 1}  # a pooled stream, proven idle before
        # the stream given back one iteration earlier is polled, in relaxed mode, before the wait
        # (the context checked first: nothing of a reset context is queried)
        assert it["sync"] == {"cuCtxGetId": 1, "cuStreamQuery": 1, EXCHANGE: 2,
                              "cuStreamSynchronize": 1}
        assert it["sync_log"] == ["cuStreamQuery", "cuStreamSynchronize"]
        assert it["destroy"] == {}  # parked: no driver call
        assert it["unload"] == {}
    assert rt.fake.count("cuStreamCreate") == 0  # nothing made in the steady state
    assert rt.stats()["driver_stream_creates"] == 2
    # the whole iteration, the launch included: a bare launch (test_bare_launch.py: no context
    # current in this thread, so none is pushed; the stream names it), on the graph path its
    # relaxed-mode bracket, cuStreamIsCapturing and cuGraphLaunch, else cuLaunchKernel
    launch = {"cuCtxGetCurrent": 1}
    launch.update({"cuGraphLaunch": 1, EXCHANGE: 2, "cuStreamIsCapturing": 1} if graph == "1"
                  else {"cuLaunchKernel": 1})
    assert all(it["launch"] == launch for it in log[3:])
    total = sum(sum(it[k].values()) for k in ("load", "get", "create", "launch", "sync",
                                               "destroy", "unload") for it in log[3:4])
    assert total == 7 + sum(launch.values())


def test_async_step_driver_calls_and_stream_turns(make_runtime):
    """The async step (two producers on their own streams, joined, then a combine on a third, each
    synchronised and destroyed): no query outside a synchronisation, no stream made in the steady
    state, and each launch finds the same driver stream every step (the graph path keeps its execs
    per stream)."""
    rt = make_runtime(env=STEADY)
    fa, fb, fc = module(rt, "a", "b", "c")
    per_call, turns = {}, []
    for step in range(6):
        def note(name, fn):
            c = calls(rt, fn)
            if step >= 2:
                for k, v in c.items():
                    per_call.setdefault(name, {}).setdefault(k, 0)
                    per_call[name][k] += v
        h = {}
        row = []
        for name, f in (("a", fa), ("b", fb)):
            note("create", lambda: h.__setitem__(name, rt.mgpuStreamCreate()))
            rt.launch(f, stream=h[name])
            row.append(rt.fake.fake_last_stream())
        for name in ("a", "b"):
            note("sync", lambda: rt.mgpuStreamSynchronize(h[name]))
            note("destroy", lambda: rt.mgpuStreamDestroy(h[name]))
        note("create", lambda: h.__setitem__("c", rt.mgpuStreamCreate()))
        rt.launch(fc, stream=h["c"])
        row.append(rt.fake.fake_last_stream())
        note("sync", lambda: rt.mgpuStreamSynchronize(h["c"]))
        note("destroy", lambda: rt.mgpuStreamDestroy(h["c"]))
        turns.append(row)
    steps = 4
    assert per_call["create"] == {"cuCtxGetId": 3 * steps}
    # b's synchronisation comes right after a's destroy: it leaves a (just given back) to the
    # next one and, with nothing else draining, makes no poll at all (pool.c, d_sync_poll); each
    # stream is still queried once per step
    assert per_call["sync"] == {"cuCtxGetId": 2 * steps, "cuStreamQuery": 3 * steps,
                                EXCHANGE: 4 * steps, "cuStreamSynchronize": 3 * steps}
    assert "destroy" not in per_call  # no driver call at all
    assert all(row == turns[1] for row in turns[1:])
    assert rt.stats()["driver_stream_creates"] == 3


def test_event_sequence_driver_calls(make_runtime):
    rt = make_runtime(env=STEADY)
    s = rt.mgpuStreamCreate()
    log = []
    for _ in range(6):
        h = {}
        it = {"create": calls(rt, lambda: h.__setitem__("e", rt.mgpuEventCreate())),
              "record": calls(rt, lambda: rt.mgpuEventRecord(h["e"], s)),
              "sync": calls(rt, lambda: rt.mgpuEventSynchronize(h["e"])),
              "destroy": calls(rt, lambda: rt.mgpuEventDestroy(h["e"]))}
        log.append(it)
    for it in log[2:]:
        assert it == {"create": {"cuCtxGetId": 1}, "record": {"cuEventRecord": 1},
                      "sync": {"cuCtxGetId": 1, "cuEventQuery": 1, EXCHANGE: 2,
                               "cuEventSynchronize": 1},
                      "destroy": {}}
    assert rt.stats()["driver_event_creates"] == 2


@pytest.mark.parametrize("spare_after", [SPARE_AFTER, 5, 0])
def test_the_first_creates_poll_the_parked_stream_then_a_spare_takes_turns(make_runtime,
                                                                          spare_after):
    """The default: a create / launch / synchronise / destroy loop gets the stream it gave back at
    each of the device's first SPARE_AFTER creates (the first makes it), polled at the create (one cuStreamQuery in
    relaxed mode), so a program that makes a few streams makes one driver stream, as stock's
    driver recycles the destroyed one (a second driver stream beside a live one cost the H100
    120-270 us, run N2). From then on a create makes one spare without polling, and the two take
    turns: the poll moves to the synchronisation, where the thread waits for the device anyway.
    With MGPU_CACHED_POOL_SPARE_AFTER=0 the spare comes at the second create."""
    rt = make_runtime(env={"MGPU_CACHED_POOL_SPARE_AFTER": str(spare_after)})
    (f,) = module(rt, "k")
    log = []
    n = max(spare_after, 1)  # the first take makes the stream: it never polls
    for _ in range(n + 6):
        h = {}
        create = calls(rt, lambda: h.__setitem__("s", rt.mgpuStreamCreate()))
        rt.launch(f, stream=h["s"])
        sync = calls(rt, lambda: rt.mgpuStreamSynchronize(h["s"]))
        rt.mgpuStreamDestroy(h["s"])
        log.append((h["s"], create, sync))
    first = log[0][0]
    # the first create makes the stream; the next ones poll it and take it back
    assert log[0][1].get("cuStreamCreate") == 1
    for s, create, sync in log[1:n]:
        assert s == first
        assert create == {"cuCtxGetId": 1, "cuStreamQuery": 1, EXCHANGE: 2}
        assert "cuStreamQuery" not in sync  # nothing parked while the stream is out
    # the create after the first SPARE_AFTER (the first with no poll) makes the spare; from then two
    # driver streams take turns, each proven idle by the synchronisation's poll
    assert log[n][1].get("cuStreamCreate") == 1 and log[n][0] != first
    for i, (s, create, sync) in enumerate(log[n + 1:]):
        assert create == {"cuCtxGetId": 1}
        assert sync.get("cuStreamQuery") == 1
        assert s == (first if i % 2 == 0 else log[n][0])
    assert rt.stats()["driver_stream_creates"] == 2


def test_a_parked_stream_is_reused_only_once_a_poll_finds_it_complete(rt):
    """No heuristic: a destroyed stream the program may still have work on (here a kernel that has
    not finished) is never handed out, however many synchronisations poll it, until the driver
    reports it complete."""
    (f,) = module(rt, "k")
    rt.fake.fake_set_busy_launches(1)
    s = rt.mgpuStreamCreate()
    rt.launch(f, stream=s)
    rt.mgpuStreamDestroy(s)
    rt.fake.fake_set_busy_launches(0)
    handed = set()
    for _ in range(6):
        t = rt.mgpuStreamCreate()
        handed.add(t)
        rt.launch(f, stream=t)
        rt.mgpuStreamSynchronize(t)  # polls s: still busy
        rt.mgpuStreamDestroy(t)
    assert s not in handed
    rt.fake.fake_complete(s)
    rt.mgpuStreamSynchronize(None)
    rt.mgpuStreamSynchronize(None)
    assert s in {rt.mgpuStreamCreate() for _ in range(3)}


def test_the_allocators_fence_proves_given_back_streams_idle(rt):
    """A stream given back while blocks freed on another stream wait for the reclaimer: the
    round's fence records an event on it after its work (it is one of the pool's draining
    streams), so when the fence passes the stream is idle without a query of its own (pool.h,
    mc_pool_parked_idle): the program's next synchronisation polls nothing and the next create
    takes it without a driver call. (A stream still busy is never handed out:
    test_a_parked_stream_is_reused_only_once_a_poll_finds_it_complete.)"""
    (f,) = module(rt, "k")
    s, t = rt.mgpuStreamCreate(), rt.mgpuStreamCreate()
    rt.launch(f, stream=s)
    rt.mgpuStreamSynchronize(s)
    p = rt.mgpuMemAlloc(4096, t, False)
    rt.mgpuStreamDestroy(s)  # parked: no driver call
    rt.fake.fake_reset()
    rt.mgpuMemFree(p, t)  # pending: a reclaimer round follows, with its fence
    until(lambda: rt.stats()["stream_fence_proofs"] == 1, "the reclaimer's fence")
    assert rt.fake.count("cuStreamQuery") == 0
    c = calls(rt, lambda: rt.mgpuStreamSynchronize(None))
    assert c.get("cuStreamQuery", 0) == 0  # nothing left for the program's thread to poll
    # no driver stream made, no query (the reclaimer's round may still be clearing the block and
    # checking the headroom meanwhile: its calls are not the create's)
    c = calls(rt, lambda: rt.mgpuStreamCreate())
    assert c.get("cuStreamCreate", 0) == 0 and c.get("cuStreamQuery", 0) == 0
    assert rt.stats()["driver_stream_creates"] == 2  # s came back


@pytest.mark.parametrize("disable", [True, False])
def test_the_synchronisations_poll_adds_nothing_to_another_threads_capture(make_runtime, capfd,
                                                                           disable):
    """The poll a synchronisation makes is the library's own: in relaxed mode, so while another
    thread captures in global mode the driver refuses the call it refuses with stock, the
    program's own cuStreamSynchronize (reported, the capture invalidated), and not the poll's
    query before it (fake_capture.h refuses unsafe calls in global mode and counts them)."""
    rt = make_runtime(disable=disable, env={"MGPU_CACHED_GRAPH": "0", **STEADY})
    (f,) = module(rt, "k")
    begin = rt.fake.lib.cuStreamBeginCapture_v2
    begin.restype, begin.argtypes = ctypes.c_int, [vp, ctypes.c_int]
    end = rt.fake.lib.cuStreamEndCapture
    end.restype, end.argtypes = ctypes.c_int, [vp, ctypes.POINTER(vp)]
    violations = rt.fake.lib.fake_capture_violations
    violations.restype = ctypes.c_long
    for _ in range(2):  # a steady state first: a parked stream to poll at each synchronisation
        s = rt.mgpuStreamCreate()
        rt.launch(f, stream=s)
        rt.mgpuStreamSynchronize(s)
        rt.mgpuStreamDestroy(s)
    cs = rt.mgpuStreamCreate()
    started, go, result = threading.Event(), threading.Event(), []

    def capturer():
        result.append(begin(cs, 0))  # global mode
        started.set()
        go.wait()
        g = vp()
        result.append(end(cs, ctypes.byref(g)))
    t = threading.Thread(target=capturer)
    t.start()
    started.wait()
    queries = 0
    for _ in range(4):
        s = rt.mgpuStreamCreate()
        rt.launch(f, stream=s)
        queries += calls(rt, lambda: rt.mgpuStreamSynchronize(s)).get("cuStreamQuery", 0)
        rt.mgpuStreamDestroy(s)
    go.set()
    t.join()
    assert queries == (0 if disable else 4)  # the polls ran while the capture did
    assert violations() == 1  # the first synchronisation, as with stock; the capture is over
    assert capfd.readouterr().err.count("'cuStreamSynchronize(stream)' failed") == 1
    assert result[0] == 0 and result[1] != 0


@pytest.mark.parametrize("fresh", [False, True], ids=["default", "POLL_FRESH=1"])
def test_a_synchronisation_leaves_the_stream_just_given_back_to_a_later_one(make_runtime, fresh):
    """A thread that destroys a stream and synchronises another at once most often has nothing
    left to wait for: that synchronisation does not query the stream just given back (nor check
    the context for it). Any other pool call of the thread in between (a create, a launch on a
    stream) makes it due again, and the next synchronisation polls it."""
    rt = make_runtime(env={"MGPU_CACHED_POOL_POLL_FRESH": "1" if fresh else "0"})
    (f,) = module(rt, "k")
    s, t = rt.mgpuStreamCreate(), rt.mgpuStreamCreate()
    rt.launch(f, stream=s)
    rt.launch(f, stream=t)
    rt.mgpuStreamSynchronize(s)
    rt.mgpuStreamDestroy(s)
    c = calls(rt, lambda: rt.mgpuStreamSynchronize(t))
    assert c.get("cuStreamQuery", 0) == (1 if fresh else 0)
    assert c.get("cuCtxGetId", 0) == (1 if fresh else 0)
    rt.launch(f, stream=t)  # another pool call: s is due
    c = calls(rt, lambda: rt.mgpuStreamSynchronize(t))
    assert c.get("cuStreamQuery", 0) == (0 if fresh else 1)  # polled here (or already idle)
    assert rt.mgpuStreamCreate() == s  # proven idle, handed out again


def test_a_reset_before_the_poll_forgets_the_parked_stream(make_runtime):
    """A stream parked by mgpuStreamDestroy, then the primary context reset (G7): the next
    synchronisation checks the context before it polls, so the dead stream is never queried nor
    handed out again; the next create makes one in the new context. (MGPU_CACHED_POOL_POLL_FRESH:
    the synchronisation polls the stream its thread gave back just before.)"""
    rt = make_runtime(env={"MGPU_CACHED_POOL_POLL_FRESH": "1"})
    (f,) = module(rt, "k")
    s = rt.mgpuStreamCreate()
    rt.launch(f, stream=s)
    rt.mgpuStreamSynchronize(s)
    rt.mgpuStreamDestroy(s)  # parked
    rt.fake.cuDevicePrimaryCtxReset_v2.argtypes = [ctypes.c_int]
    assert rt.fake.cuDevicePrimaryCtxReset_v2(0) == 0
    c = calls(rt, lambda: rt.mgpuStreamSynchronize(None))
    assert c.get("cuStreamQuery", 0) == 0 and c["cuCtxGetId"] >= 1
    assert rt.stats()["context_recoveries"] == 1
    made = rt.fake.count("cuStreamCreate")
    rt.mgpuStreamCreate()
    assert rt.fake.count("cuStreamCreate") == made + 1  # a new driver stream, not the dead one
