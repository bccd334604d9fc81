# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The graph launch path (issue 12, csrc/launch/graph_launch.c) against the recording fake driver:
launches on the library's streams go through one instantiated one-node graph per (function,
driver stream), whose node is updated only when the launch differs from the one it holds (argument
*values* compared and copied, not the caller's pointers); everything else, and every failure,
takes the stream path (cuLaunchKernel) without a report."""

import ctypes

import pytest

from conftest import GRAPH_EAGER, blob_buffer, compile_shared, DRIVERS, ptx

GRAPH_CALLS = ("cuGraphCreate", "cuGraphAddKernelNode", "cuGraphInstantiate", "cuGraphLaunch",
               "cuGraphExecKernelNodeSetParams", "cuGraphExecDestroy", "cuLaunchKernel")


@pytest.fixture
def grt(make_runtime):
    def make(sizes="8,4", **env):
        e = {"MGPU_CACHED_GRAPH": "1", "FAKECUDA_PARAM_SIZES": sizes, **GRAPH_EAGER}
        e.update({k: str(v) for k, v in env.items()})
        return make_runtime(env=e)
    return make


def kernels(rt, *names, warm=True):
    """The functions, each launched once already (a function's first launch takes the stream
    path: test_first_launch_takes_the_stream_path), then the fake's counts cleared and the
    library's statistics noted, so that the tests see the steady state (stats(rt))."""
    m = rt.mgpuModuleLoad(blob_buffer(ptx(*names)), 0)
    fs = [rt.mgpuModuleGetFunction(m, n.encode()) for n in names]
    if not warm:
        return fs
    warm = rt.mgpuStreamCreate()
    for f in fs:
        launch(rt, f, warm, Args())
    rt.mgpuStreamSynchronize(warm)
    rt.fake.fake_reset()
    rt.fake.lib.fake_arg_log_clear()
    rt.stats0 = stats(rt)
    return fs


def stats(rt):
    """The library's statistics since kernels() (counters as differences)."""
    base = getattr(rt, "stats0", {})
    return {k: v - base.get(k, 0) for k, v in rt.stats().items()}


def kernel_and_stream(rt):
    """Kernel "k" and a stream of the library's: the set-up of most tests here."""
    f, = kernels(rt, "k")
    return f, rt.mgpuStreamCreate()


class Args:
    """Argument storage as generated code keeps it: one buffer per argument, an array of
    pointers to them (reused from launch to launch)."""

    def __init__(self, a=0, b=0):
        self.a, self.b = ctypes.c_int64(a), ctypes.c_int32(b)
        self.ptrs = (ctypes.c_void_p * 2)(ctypes.addressof(self.a), ctypes.addressof(self.b))


def launch(rt, f, stream, args=None, grid=(1, 1, 1), block=(32, 1, 1), smem=0, extra=None):
    rt.lib.mgpuLaunchKernel(f, *grid, *block, smem, stream, args.ptrs if args else None, extra, 2)


def test_launches_on_library_streams_go_through_one_exec(grt, capfd):
    rt = grt()
    f, s = kernel_and_stream(rt)
    args = Args(7, 9)
    for _ in range(5):
        launch(rt, f, s, args)
    c = rt.fake.counts(*GRAPH_CALLS)
    assert c == {"cuGraphCreate": 1, "cuGraphAddKernelNode": 1, "cuGraphInstantiate": 1,
                 "cuGraphLaunch": 5, "cuGraphExecKernelNodeSetParams": 0,
                 "cuGraphExecDestroy": 0, "cuLaunchKernel": 0}
    assert (rt.fake.fake_last_arg(0), rt.fake.fake_last_arg(1)) == (7, 9)
    assert rt.fake.fake_last_stream() == rt.pin(s)  # the handle's driver stream
    st = stats(rt)
    assert (st["graph_launches"], st["graph_instantiates"], st["graph_update_skips"],
            st["launches"]) == (5, 1, 4, 5)
    assert capfd.readouterr().err == ""


def test_node_updated_only_when_the_launch_changed(grt):
    rt = grt()
    f, s = kernel_and_stream(rt)
    args = Args(1, 2)
    launch(rt, f, s, args)
    launch(rt, f, s, args)
    assert rt.fake.count("cuGraphExecKernelNodeSetParams") == 0
    args.b.value = 3  # same storage, new value: must be seen
    launch(rt, f, s, args)
    assert rt.fake.count("cuGraphExecKernelNodeSetParams") == 1
    assert rt.fake.fake_last_arg(1) == 3
    launch(rt, f, s, Args(1, 3))  # other storage, same values: no update
    assert rt.fake.count("cuGraphExecKernelNodeSetParams") == 1
    launch(rt, f, s, Args(1, 3), grid=(2, 1, 1))
    assert rt.fake.count("cuGraphExecKernelNodeSetParams") == 2
    assert rt.fake.fake_last_launch(0) == 2
    launch(rt, f, s, Args(1, 3), grid=(2, 1, 1), block=(64, 1, 1))
    launch(rt, f, s, Args(1, 3), grid=(2, 1, 1), block=(64, 1, 1), smem=128)
    assert rt.fake.count("cuGraphExecKernelNodeSetParams") == 4
    assert [rt.fake.fake_last_launch(i) for i in range(7)] == [2, 1, 1, 64, 1, 1, 128]
    assert rt.fake.count("cuGraphLaunch") == 7 and rt.fake.count("cuLaunchKernel") == 0


def test_argument_values_are_copied_at_the_launch(grt):
    rt = grt()
    f, s = kernel_and_stream(rt)
    args = Args(10, 20)
    launch(rt, f, s, args)
    args.a.value = 11  # the program changes its storage after the launch returned
    assert rt.fake.fake_last_arg(0) == 10  # what was launched is unchanged
    launch(rt, f, s, args)
    assert rt.fake.fake_last_arg(0) == 11
    # the same values as the stream path would pass
    rt0 = grt(MGPU_CACHED_GRAPH=0)
    g, s0 = kernel_and_stream(rt0)
    launch(rt0, g, s0, args)
    assert rt0.fake.count("cuGraphLaunch") == 0 and rt0.fake.count("cuLaunchKernel") == 1
    assert (rt0.fake.fake_last_arg(0), rt0.fake.fake_last_arg(1)) == (11, 20)


def test_unknown_argument_sizes_update_every_launch(grt):
    rt = grt(sizes="unknown")
    f, s = kernel_and_stream(rt)
    for i in range(4):
        launch(rt, f, s, Args(i, i))
    assert rt.fake.counts("cuGraphInstantiate", "cuGraphLaunch", "cuGraphExecKernelNodeSetParams",
                          "cuLaunchKernel") == {"cuGraphInstantiate": 1, "cuGraphLaunch": 4,
                                                "cuGraphExecKernelNodeSetParams": 3,
                                                "cuLaunchKernel": 0}


def test_one_exec_per_driver_stream(grt):
    rt = grt()
    f, = kernels(rt, "k")
    s1, s2 = rt.mgpuStreamCreate(), rt.mgpuStreamCreate()
    launch(rt, f, s1, Args(1, 1))
    d1 = rt.fake.fake_last_stream()
    launch(rt, f, s2, Args(2, 2))
    d2 = rt.fake.fake_last_stream()
    assert d1 != d2
    launch(rt, f, s1, Args(3, 3))
    assert rt.fake.fake_last_stream() == d1
    assert rt.fake.count("cuGraphInstantiate") == 2 and rt.fake.count("cuGraphLaunch") == 3


def test_execs_per_stream_are_bounded(grt):
    rt = grt(MGPU_CACHED_GRAPH_EXECS=2)
    f, g, h = kernels(rt, "a", "b", "c")
    s = rt.mgpuStreamCreate()
    for k in (f, g, f, h):  # h evicts g (least recently launched), not f
        launch(rt, k, s, Args(1, 1))
    assert rt.fake.count("cuGraphInstantiate") == 3
    assert rt.fake.count("cuGraphExecDestroy") == 1 and rt.fake.fake_live_execs() == 2
    launch(rt, f, s, Args(1, 1))
    assert rt.fake.count("cuGraphInstantiate") == 3  # f kept
    launch(rt, g, s, Args(1, 1))  # full, and too soon after the last eviction: stream path
    assert rt.fake.count("cuGraphInstantiate") == 3 and rt.fake.count("cuLaunchKernel") == 1
    assert stats(rt)["graph_full"] == 1
    for _ in range(256):
        launch(rt, f, s, Args(1, 1))
    launch(rt, g, s, Args(1, 1))  # 256 launches later: g evicts h
    assert rt.fake.count("cuGraphInstantiate") == 4 and rt.fake.fake_live_execs() == 2
    assert stats(rt)["graph_evictions"] == 2
    for _ in range(50):  # synchronous launch pattern: handles come and go, execs stay bounded
        t = rt.mgpuStreamCreate()
        launch(rt, h, t, Args(1, 1))
        rt.mgpuStreamSynchronize(t)
        rt.mgpuStreamDestroy(t)
    assert rt.fake.fake_live_execs() <= 2 * 2


def test_a_loop_over_more_kernels_than_execs_does_not_instantiate_per_launch(grt):
    """Round robin over 5 kernels on a stream keeping 2 execs: without a limit every launch would
    evict and instantiate; with it, at most one instantiation per 256 launches on the stream, the
    other launches through cuLaunchKernel, every launch with its own arguments."""
    rt = grt(MGPU_CACHED_GRAPH_EXECS=2)
    ks = kernels(rt, "a", "b", "c", "d", "e")
    s = rt.mgpuStreamCreate()
    n = 1000
    for i in range(n):
        launch(rt, ks[i % 5], s, Args(i, i))
        assert (rt.fake.fake_last_arg(0), rt.fake.fake_last_arg(1)) == (i, i)
    c = rt.fake.counts("cuGraphInstantiate", "cuGraphLaunch", "cuLaunchKernel")
    assert c["cuGraphInstantiate"] <= 2 + n // 256 + 1
    assert c["cuGraphLaunch"] + c["cuLaunchKernel"] == n and c["cuLaunchKernel"] > n // 2
    assert rt.fake.fake_live_execs() == 2 and stats(rt)["launches"] == n


def test_alternating_argument_sets_get_an_exec_each(grt):
    """A step swapping its buffers every launch: the second launch updates the node, the third
    (the first set again) makes a second exec, and from then on no launch updates."""
    rt = grt()
    f, s = kernel_and_stream(rt)
    a, b = Args(10, 1), Args(20, 2)
    for i in range(10):
        x = (a, b)[i % 2]
        launch(rt, f, s, x)
        assert (rt.fake.fake_last_arg(0), rt.fake.fake_last_arg(1)) == (x.a.value, x.b.value)
    c = rt.fake.counts(*GRAPH_CALLS)
    assert (c["cuGraphInstantiate"], c["cuGraphExecKernelNodeSetParams"], c["cuGraphLaunch"],
            c["cuLaunchKernel"]) == (2, 1, 10, 0)
    assert stats(rt)["graph_update_skips"] == 7
    a.a.value = 11  # the storage changed: a launch with new values updates one of the two
    launch(rt, f, s, a)
    assert rt.fake.fake_last_arg(0) == 11 and rt.fake.count("cuGraphExecKernelNodeSetParams") == 2
    assert rt.fake.count("cuGraphInstantiate") == 2


def test_changing_arguments_keep_one_exec(grt):
    """Arguments that never repeat (a step counter) are updates of one exec, never a second."""
    rt = grt()
    f, s = kernel_and_stream(rt)
    for i in range(20):
        launch(rt, f, s, Args(i, 0))
        assert rt.fake.fake_last_arg(0) == i
    assert rt.fake.counts("cuGraphInstantiate", "cuGraphExecKernelNodeSetParams") == {
        "cuGraphInstantiate": 1, "cuGraphExecKernelNodeSetParams": 19}


def test_rotating_argument_sets_of_a_kernel_alone_on_its_stream_get_an_exec_each(grt):
    """A loop whose allocations rotate among four blocks (the async step on the H100, run L5): the
    kernel, alone on its stream, gets an exec per set once a set repeats, and from then on no
    launch updates a node; every launch still runs with its own values."""
    rt = grt()
    f, s = kernel_and_stream(rt)
    sets = [Args(100 + i, i) for i in range(4)]
    for i in range(40):
        x = sets[(i * 3) % 4]  # 0, 3, 2, 1, 0, ...: no two-set alternation
        launch(rt, f, s, x)
        assert (rt.fake.fake_last_arg(0), rt.fake.fake_last_arg(1)) == (x.a.value, x.b.value)
    c = rt.fake.counts(*GRAPH_CALLS)
    assert (c["cuGraphInstantiate"], c["cuGraphLaunch"], c["cuLaunchKernel"]) == (4, 40, 0)
    # the first exec holds set 0; the rest of the first round and set 0 again are updates (4),
    # after which each repeated set gets an exec (3 more) and every launch is a skip
    assert c["cuGraphExecKernelNodeSetParams"] == 4
    assert stats(rt)["graph_update_skips"] == 40 - 4 - 4


def test_rotating_sets_on_a_shared_stream_take_the_functions_share_of_execs(grt):
    """Two kernels on one stream share its eight execs: the rotating kernel makes execs for
    repeated sets only up to its share (four), the rest are updates, and the other kernel keeps
    its exec."""
    rt = grt()
    f, g = kernels(rt, "k", "k2")
    s = rt.mgpuStreamCreate()
    launch(rt, g, s, Args(1, 1))
    launch(rt, g, s, Args(1, 1))  # g's exec on s
    base = rt.fake.count("cuGraphInstantiate")
    sets = [Args(100 + i, i) for i in range(6)]
    for i in range(60):
        x = sets[(i * 5) % 6]
        launch(rt, f, s, x)
        assert rt.fake.fake_last_arg(0) == x.a.value
    assert rt.fake.count("cuGraphInstantiate") - base == 4
    assert stats(rt)["graph_evictions"] == 0
    skips = stats(rt)["graph_update_skips"]
    launch(rt, g, s, Args(1, 1))  # g's exec still holds its launch
    assert stats(rt)["graph_update_skips"] == skips + 1 and rt.fake.fake_last_arg(0) == 1


@pytest.mark.parametrize("execs", [8, 16])
def test_a_kernel_alone_keeps_at_most_the_streams_execs(grt, execs):
    """Twelve rotating sets of a kernel alone on its stream: at most MGPU_CACHED_GRAPH_EXECS
    execs (8 by default), the rest updates; no eviction either way."""
    rt = grt(MGPU_CACHED_GRAPH_EXECS=execs)
    f, s = kernel_and_stream(rt)
    sets = [Args(100 + i, i) for i in range(12)]
    for i in range(96):
        x = sets[i % 12]
        launch(rt, f, s, x)
        assert rt.fake.fake_last_arg(0) == x.a.value
    assert rt.fake.count("cuGraphInstantiate") == min(execs, 12)
    assert stats(rt)["graph_evictions"] == 0
    if execs == 16:  # every set in a node of its own: no update after the second round
        before = rt.fake.count("cuGraphExecKernelNodeSetParams")
        for i in range(24):
            launch(rt, f, s, sets[i % 12])
        assert rt.fake.count("cuGraphExecKernelNodeSetParams") == before


def test_a_second_argument_set_never_evicts(grt):
    """With the stream's execs full, alternating sets update the one exec (no eviction)."""
    rt = grt(MGPU_CACHED_GRAPH_EXECS=1)
    f, s = kernel_and_stream(rt)
    for i in range(6):
        launch(rt, f, s, (Args(1, 1), Args(2, 2))[i % 2])
        assert rt.fake.fake_last_arg(0) == 1 + i % 2
    assert rt.fake.counts("cuGraphInstantiate", "cuGraphExecKernelNodeSetParams") == {
        "cuGraphInstantiate": 1, "cuGraphExecKernelNodeSetParams": 5}
    assert stats(rt)["graph_evictions"] == 0


def test_streams_not_ours_and_other_launch_kinds_take_the_stream_path(grt):
    rt = grt(MGPU_CACHED_STREAM_HANDLES="tagged")  # pinned handles are a tagged-handle notion
    f, = kernels(rt, "k")
    launch(rt, f, None, Args(1, 1))  # NULL stream
    s = rt.mgpuStreamCreate()
    d = rt.pin(s)  # pinned: the program may enqueue on d behind our back
    launch(rt, f, s, Args(1, 1))
    launch(rt, f, d, Args(1, 1))  # a driver stream passed as a foreign handle
    t = rt.mgpuStreamCreate()
    extra = (ctypes.c_void_p * 1)(None)
    launch(rt, f, t, None, extra=extra)  # extra-packed arguments
    rt.lib.mgpuLaunchKernelCooperative(f, 1, 1, 1, 32, 1, 1, 0, 0, 0, 0, t, Args(1, 1).ptrs, None)
    rt.lib.mgpuLaunchClusterKernel(f, 1, 1, 1, 1, 1, 1, 32, 1, 1, 0, t, Args(1, 1).ptrs, None, 2)
    assert rt.fake.counts("cuGraphCreate", "cuGraphLaunch", "cuLaunchKernel", "cuLaunchKernelEx") == {
        "cuGraphCreate": 0, "cuGraphLaunch": 0, "cuLaunchKernel": 4, "cuLaunchKernelEx": 2}
    launch(rt, f, t, Args(1, 1))  # and the same function on a stream of ours: the graph path
    assert rt.fake.count("cuGraphLaunch") == 1


@pytest.mark.parametrize("call,after,stream_launches", [
    ("cuGraphCreate", 0, 3), ("cuGraphAddKernelNode", 0, 3), ("cuGraphInstantiate", 0, 3),
    ("cuGraphExecKernelNodeSetParams", 0, 3), ("cuGraphLaunch", 0, 3), ("cuGraphLaunch", 1, 2)])
def test_a_failure_falls_back_silently_and_disables_the_function(grt, capfd, call, after,
                                                                 stream_launches):
    rt = grt()
    f, g = kernels(rt, "f", "g")
    s = rt.mgpuStreamCreate()
    pre = call == "cuGraphExecKernelNodeSetParams"
    if pre:
        launch(rt, f, s, Args(0, 0))  # an exec whose node the next launch must update
    rt.fake.fake_fail(call.encode(), 999, after)
    for i in range(3):
        launch(rt, f, s, Args(i + 1, i))
        assert rt.fake.fake_last_arg(0) == i + 1  # every launch ran, with its own values
    d = rt.fake.fake_last_stream()
    assert rt.fake.count("cuLaunchKernel") == stream_launches
    n_graph = rt.fake.count("cuGraphLaunch")
    launch(rt, f, s, Args(9, 9))
    assert rt.fake.count("cuGraphLaunch") == n_graph  # f stays on the stream path
    assert rt.fake.count("cuLaunchKernel") == stream_launches + 1
    assert stats(rt)["graph_disabled_functions"] == 1
    launch(rt, g, s, Args(5, 5))  # another function still takes the graph path
    assert rt.fake.count("cuGraphLaunch") == n_graph + 1 and rt.fake.fake_last_arg(0) == 5
    assert rt.fake.fake_last_stream() == d  # same driver stream either way
    assert capfd.readouterr().err == ""  # nothing reported
    st = stats(rt)
    assert st["errors"] == 0 and st["launches"] == 5 + pre
    assert rt.fake.fake_live_execs() == 1  # the failed exec was destroyed, g's kept


def test_the_switch_and_stock_mode_make_no_graph_call(make_runtime):
    for env, disable in (({"MGPU_CACHED_GRAPH": "0"}, False), ({"MGPU_CACHED_GRAPH": "1"}, True)):
        rt = make_runtime(env=dict(env, FAKECUDA_PARAM_SIZES="8,4", **GRAPH_EAGER),
                          disable=disable)
        f, s = kernel_and_stream(rt)
        for _ in range(3):
            launch(rt, f, s, Args(1, 2))
        c = rt.fake.counts(*GRAPH_CALLS)
        assert c["cuLaunchKernel"] == 3 and sum(c.values()) == 3, (env, disable, c)


def test_default_is_on(make_runtime, monkeypatch):
    monkeypatch.delenv("MGPU_CACHED_GRAPH", raising=False)
    rt = make_runtime(env=GRAPH_EAGER)
    f, s = kernel_and_stream(rt)
    launch(rt, f, s)
    assert rt.fake.count("cuGraphLaunch") == 1


@pytest.fixture(scope="session")
def no_graph_driver(tmp_path_factory):
    out = tmp_path_factory.mktemp("drivers") / "libfakecuda_nograph.so"
    return compile_shared(DRIVERS / "fakecuda.c", out, ["-DFAKECUDA_NO_GRAPH"])


def test_a_driver_without_graph_entry_points_takes_the_stream_path(make_runtime, no_graph_driver,
                                                                   tmp_path, capfd):
    import shutil
    from conftest import Fake
    drv = tmp_path / "libfakecuda_nograph_copy.so"
    shutil.copyfile(no_graph_driver, drv)
    fake = Fake(drv)  # the instance the library will dlopen (same path)
    rt = make_runtime(driver=str(drv), env={"MGPU_CACHED_GRAPH": "1", **GRAPH_EAGER})
    f, s = kernel_and_stream(rt)
    fake.fake_reset()
    launch(rt, f, s)
    launch(rt, f, s)
    assert fake.count("cuLaunchKernel") == 2
    assert stats(rt)["launches"] == 2 and stats(rt)["graph_launches"] == 0
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("threads", ["1", "2"])
def test_launches_of_threads_in_turn_take_the_stream_path(grt, threads):
    """cuGraphLaunch serialises threads in the driver (H100: ~0.4M graph launches/s in all from 1
    to 16 threads, more than its stream launches only from 2): a launch takes the graph path only
    once its thread made 4 launches in a row among at most MGPU_CACHED_GRAPH_THREADS launching
    threads (the first launch of the process excepted). A thread that took the graph path and
    finds that another thread claimed the word launches through cuLaunchKernel, and does not wait
    for the thread inside cuGraphLaunch."""
    import threading
    import time
    rt = grt(MGPU_CACHED_GRAPH_THREADS=threads)
    rt.fake.lib.fake_hold_graph_launches.argtypes = [ctypes.c_int]
    rt.fake.lib.fake_in_graph_launch.restype = ctypes.c_long
    f, = kernels(rt, "k")
    s1, s2 = rt.mgpuStreamCreate(), rt.mgpuStreamCreate()
    launch(rt, f, s1, Args(1, 0))
    launch(rt, f, s2, Args(2, 0))  # both streams have their exec
    assert rt.fake.count("cuGraphLaunch") == 2

    def other_thread():
        for v in (3, 4, 5, 6):  # another thread's turn: the stream path until its 5th in a row
            launch(rt, f, s1, Args(v, 0))
        launch(rt, f, s1, Args(7, 0))  # graph path (held in the fake)

    rt.fake.lib.fake_hold_graph_launches(1)
    t = threading.Thread(target=other_thread)
    t.start()
    deadline = time.time() + 10
    while rt.fake.lib.fake_in_graph_launch() == 0 and time.time() < deadline:
        time.sleep(0.001)
    assert rt.fake.lib.fake_in_graph_launch() == 1  # the other thread is inside cuGraphLaunch
    assert rt.fake.count("cuLaunchKernel") == 4
    launch(rt, f, s2, Args(8, 0))  # another thread launched last: stream path, no wait
    assert rt.fake.count("cuLaunchKernel") == 5 and rt.fake.fake_last_arg(0) == 8
    rt.fake.lib.fake_hold_graph_launches(0)
    t.join()
    assert rt.fake.count("cuGraphLaunch") == 3
    for v in (9, 10, 11):
        launch(rt, f, s2, Args(v, 0))
    assert rt.fake.count("cuGraphLaunch") == 3 and rt.fake.count("cuLaunchKernel") == 8
    launch(rt, f, s2, Args(12, 0))  # the main thread's 5th in a row: graph path, node updated
    assert rt.fake.count("cuGraphLaunch") == 4 and rt.fake.fake_last_arg(0) == 12
    assert stats(rt)["graph_contended"] == 8
    assert sorted(a for a in rt.fake.arg_log() if a) == list(range(1, 13))  # each ran once


def test_missing_arguments_are_left_to_the_driver(grt, capfd):
    """A kernel that takes arguments launched without them (bad input): never read by the
    library, passed to the driver as the stock wrapper does."""
    rt = grt()
    f, s = kernel_and_stream(rt)
    launch(rt, f, s, Args(1, 1))  # an exec exists
    launch(rt, f, s, None)        # then no arguments at all
    assert rt.fake.count("cuGraphLaunch") == 1 and rt.fake.count("cuLaunchKernel") == 1
    launch(rt, f, s, Args(2, 2))  # the exec is still usable
    assert rt.fake.count("cuGraphLaunch") == 2 and rt.fake.fake_last_arg(0) == 2
    m = rt.mgpuModuleLoad(blob_buffer(ptx("g")), 0)
    g = rt.mgpuModuleGetFunction(m, b"g")
    launch(rt, g, s, None)        # and the first launch of another kernel without them
    assert rt.fake.count("cuLaunchKernel") == 2 and rt.fake.count("cuGraphInstantiate") == 1
    launch(rt, g, s, Args(3, 3))  # which keeps the graph path for its proper launches
    assert rt.fake.count("cuGraphInstantiate") == 2 and rt.fake.count("cuGraphLaunch") == 3
    assert stats(rt)["graph_disabled_functions"] == 0


def test_the_exec_is_built_at_the_fourth_launch_after_100_in_the_process(make_runtime):
    """The defaults (MGPU_CACHED_GRAPH_AFTER=4, MGPU_CACHED_GRAPH_FIRST_AFTER=100): no exec until
    the process has made 100 launches (the driver's first instantiation is paid back only after
    75-117 synchronous launches on the H100, run N3), then a kernel's exec at its 4th launch that
    finds none (a later exec pays back after 3-4); the launches before take cuLaunchKernel."""
    rt = make_runtime(env={"FAKECUDA_PARAM_SIZES": "8,4"})
    m = rt.mgpuModuleLoad(blob_buffer(ptx("k", "g")), 0)
    f, g = (rt.mgpuModuleGetFunction(m, n) for n in (b"k", b"g"))
    s = rt.mgpuStreamCreate()
    for _ in range(99):
        launch(rt, f, s, Args(1, 2))
    assert rt.fake.counts("cuLaunchKernel", "cuGraphInstantiate", "cuGraphLaunch") == {
        "cuLaunchKernel": 99, "cuGraphInstantiate": 0, "cuGraphLaunch": 0}
    launch(rt, f, s, Args(1, 2))  # the process's 100th: f is long past its 4th
    launch(rt, f, s, Args(1, 2))
    assert rt.fake.counts("cuLaunchKernel", "cuGraphInstantiate", "cuGraphLaunch") == {
        "cuLaunchKernel": 99, "cuGraphInstantiate": 1, "cuGraphLaunch": 2}
    for _ in range(3):
        launch(rt, g, s, Args(3, 4))
    assert rt.fake.counts("cuLaunchKernel", "cuGraphInstantiate") == {
        "cuLaunchKernel": 102, "cuGraphInstantiate": 1}
    launch(rt, g, s, Args(3, 4))  # g's 4th
    assert rt.fake.counts("cuLaunchKernel", "cuGraphInstantiate", "cuGraphLaunch") == {
        "cuLaunchKernel": 102, "cuGraphInstantiate": 2, "cuGraphLaunch": 3}
    assert rt.stats()["graph_first_launches"] == 102


def test_a_processs_first_launches_make_the_stock_calls_only(make_runtime):
    """Before the process's first exec, a launch is the stream path's cuLaunchKernel (bare, in a
    thread with no current context: the look, no push; test_bare_launch.py): no capture check
    (cuStreamIsCapturing, 4.1 us at its first call on the H100, and the relaxed mode's two
    swaps), no stream entry of the graph path."""
    rt = make_runtime()
    m = rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0)
    f = rt.mgpuModuleGetFunction(m, b"k")
    s = rt.mgpuStreamCreate()
    rt.fake.fake_reset()
    for _ in range(5):
        rt.launch(f, stream=s)
    assert rt.fake.log() == ["cuCtxGetCurrent", "cuLaunchKernel"] * 5
    assert rt.stats()["graph_first_launches"] == 5


def test_a_fork_child_waits_for_its_own_first_exec(make_runtime):
    """The process gate is the process's: a child forked after the parent built its exec makes
    its own first launches through cuLaunchKernel again (its driver instantiates afresh), and a
    function of the child starts its count again."""
    import os
    rt = make_runtime(env={"FAKECUDA_PARAM_SIZES": "8,4", "MGPU_CACHED_GRAPH_FIRST_AFTER": "5"})
    m = rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0)
    f = rt.mgpuModuleGetFunction(m, b"k")
    s = rt.mgpuStreamCreate()
    for _ in range(8):
        launch(rt, f, s, Args(1, 2))
    assert rt.fake.counts("cuLaunchKernel", "cuGraphInstantiate") == {
        "cuLaunchKernel": 4, "cuGraphInstantiate": 1}
    pid = os.fork()
    if pid == 0:  # the child: only os._exit, whatever happens
        code = 1
        try:
            rt.fake.fake_reset()
            m2 = rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0)  # the parent's handles are stale
            f2 = rt.mgpuModuleGetFunction(m2, b"k")
            s2 = rt.mgpuStreamCreate()
            for _ in range(6):
                launch(rt, f2, s2, Args(3, 4))
            got = rt.fake.counts("cuLaunchKernel", "cuGraphInstantiate")
            code = 0 if got == {"cuLaunchKernel": 4, "cuGraphInstantiate": 1} else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.mark.parametrize("after,first_after,stream_launches", [("1", "0", 0), ("3", "0", 2),
                                                               ("1", "5", 4)])
def test_the_exec_thresholds_are_switches(make_runtime, after, first_after, stream_launches):
    rt = make_runtime(env={"FAKECUDA_PARAM_SIZES": "8,4", "MGPU_CACHED_GRAPH_AFTER": after,
                           "MGPU_CACHED_GRAPH_FIRST_AFTER": first_after})
    m = rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0)
    f = rt.mgpuModuleGetFunction(m, b"k")
    s = rt.mgpuStreamCreate()
    for _ in range(8):
        launch(rt, f, s, Args(1, 2))
    assert rt.fake.counts("cuLaunchKernel", "cuGraphInstantiate", "cuGraphLaunch") == {
        "cuLaunchKernel": stream_launches, "cuGraphInstantiate": 1,
        "cuGraphLaunch": 8 - stream_launches}


def test_first_launch_takes_the_stream_path(grt):
    """A function's first launch in the process goes through cuLaunchKernel (no graph built: the
    process's first instantiation costs the driver about 0.3 ms on the H100, which a program's
    first call would wait for); its second builds the exec, and later ones reuse it."""
    rt = grt()
    m = rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0)
    f = rt.mgpuModuleGetFunction(m, b"k")
    s = rt.mgpuStreamCreate()
    launch(rt, f, s, Args(1, 2))
    assert rt.fake.counts("cuLaunchKernel", "cuGraphInstantiate", "cuGraphLaunch") == {
        "cuLaunchKernel": 1, "cuGraphInstantiate": 0, "cuGraphLaunch": 0}
    launch(rt, f, s, Args(1, 2))
    launch(rt, f, s, Args(1, 2))
    assert rt.fake.counts("cuLaunchKernel", "cuGraphInstantiate", "cuGraphLaunch") == {
        "cuLaunchKernel": 1, "cuGraphInstantiate": 1, "cuGraphLaunch": 2}
    assert rt.stats()["graph_first_launches"] == 1
