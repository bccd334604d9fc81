# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Issue 21 items 1 and 2: what threads share per launch.

The module cache's per-thread cache (csrc/modules/module_cache.c, "Thread caches"): LLVM <= 20
code loads, looks up and unloads its module around every launch; a thread's repeated hits, look-ups
and unloads take no lock (counter module_lock_takes) and make no driver call, with the same handles
and results as before, while references stay exact across threads, thread exits, evictions and
replacements. And graph_launch.c's word of launching threads, which threads launching side by side
no longer write on every launch (counter graph_launcher_stores)."""
from __future__ import annotations

import ctypes
import os
import re
import subprocess
import threading

import pytest

from conftest import GRAPH_EAGER, blob_buffer, overwrite, ptx
from test_graph_launch import Args, launch
from test_module_lifetime import sanitized_churn


def llvm19_step(rt, buf, name=b"k"):
    """One launch as LLVM <= 20 code makes it; returns the module and function handles."""
    m = rt.mgpuModuleLoad(buf, 0)
    f = rt.mgpuModuleGetFunction(m, name)
    rt.launch(f)
    rt.mgpuModuleUnload(m)
    return m, f


def test_repeated_load_lookup_launch_unload_takes_no_lock(rt):
    buf = blob_buffer(ptx("k"))
    first = llvm19_step(rt, buf)  # the miss, the first look-up: the lock is taken there
    locks = rt.stats()["module_lock_takes"]
    assert locks > 0
    calls = {c: rt.fake.count(c) for c in ("cuModuleLoadData", "cuModuleUnload",
                                            "cuModuleGetFunction")}
    for _ in range(100):
        assert llvm19_step(rt, buf) == first  # the same handles every time
    s = rt.stats()
    assert s["module_lock_takes"] == locks  # no lock on 100 hits, look-ups and unloads
    assert s["module_thread_hits"] == 100 and s["module_hits"] == 100
    assert {c: rt.fake.count(c) for c in calls} == calls  # and no driver call but the launches
    assert rt.fake.launches() == 101 and s["errors"] == 0


def test_a_threads_repeated_lookup_is_answered_from_its_entry(rt):
    """LLVM <= 20 code looks its kernel up after every load: while the thread's entry for the
    module is live, a look-up of the name it looked up last (same address, same bytes, same
    device) returns the same handle from the entry (counter function_thread_hits) with no lock;
    different bytes at that address, or a name elsewhere, take the full way."""
    buf = blob_buffer(ptx("k", "j"))
    name = ctypes.create_string_buffer(b"k")
    m = rt.mgpuModuleLoad(buf, 0)
    fk = rt.mgpuModuleGetFunction(m, name)  # the driver's look-up
    rt.mgpuModuleUnload(m)
    locks = rt.stats()["module_lock_takes"]
    for i in range(50):
        assert rt.mgpuModuleLoad(buf, 0) == m
        assert rt.mgpuModuleGetFunction(m, name) == fk
        rt.launch(fk)
        rt.mgpuModuleUnload(m)
    s = rt.stats()
    assert s["function_thread_hits"] == 50  # noted at the first look-up (the miss made the entry)
    assert s["module_lock_takes"] == locks and rt.fake.count("cuModuleGetFunction") == 1
    # the entry's answers count through the thread's counters (module_cache.c: tcache.stats)
    assert s["module_loads"] == s["module_unloads"] == s["function_lookups"] == 51
    assert s["module_thread_hits"] == 50 and s["module_hits"] == 50
    m = rt.mgpuModuleLoad(buf, 0)
    ctypes.memmove(name, b"j", 1)  # other bytes at the same address: another kernel
    fj = rt.mgpuModuleGetFunction(m, name)
    assert fj and fj != fk and rt.stats()["function_thread_hits"] == 50
    assert rt.mgpuModuleGetFunction(m, name) == fj and rt.stats()["function_thread_hits"] == 51
    assert rt.mgpuModuleGetFunction(m, b"k") == fk  # another address: the full way
    assert rt.stats()["function_thread_hits"] == 51
    rt.mgpuModuleUnload(m)
    assert rt.stats()["errors"] == 0 and rt.fake.launches() == 50


def test_a_lookup_after_the_thread_changed_device_takes_the_full_way(make_runtime):
    """An entry's look-up is answered only on the device it was made on: after
    mgpuSetDefaultDevice(1) the same name at the same address goes the full way, which resolves
    the module's kernels on device 1 at once (its module loaded there now, not at the launch), and
    the entry then answers on device 1; back on device 0, the full way again."""
    rt = make_runtime(devices=2)
    buf = blob_buffer(ptx("k"))
    name = ctypes.create_string_buffer(b"k")
    m = rt.mgpuModuleLoad(buf, 0)
    fk = rt.mgpuModuleGetFunction(m, name)
    assert rt.mgpuModuleGetFunction(m, name) == fk
    assert rt.stats()["function_thread_hits"] == 1
    assert rt.fake.count("cuModuleLoadData") == 1
    rt.mgpuSetDefaultDevice(1)
    assert rt.mgpuModuleGetFunction(m, name) == fk
    s = rt.stats()
    assert s["function_thread_hits"] == 1  # not from the entry: noted on device 0
    assert rt.fake.count("cuModuleLoadData") == 2  # resolved on device 1 by the look-up itself
    assert rt.mgpuModuleGetFunction(m, name) == fk
    assert rt.stats()["function_thread_hits"] == 2  # noted again, on device 1
    rt.launch(fk)
    assert rt.fake.fake_function_device(rt.fake.fake_last_function()) == 1
    rt.mgpuSetDefaultDevice(0)
    assert rt.mgpuModuleGetFunction(m, name) == fk
    assert rt.stats()["function_thread_hits"] == 2
    rt.mgpuModuleUnload(m)
    assert rt.stats()["errors"] == 0


def test_a_modules_kernels_looked_up_in_turn_are_answered_from_the_entry(rt):
    """LLVM <= 20 code with three kernels in one module looks each up after every load: the entry
    remembers four, so from the second round on every look-up is answered from it."""
    buf = blob_buffer(ptx("a", "b", "c"))
    names = [ctypes.create_string_buffer(n) for n in (b"a", b"b", b"c")]
    m = rt.mgpuModuleLoad(buf, 0)
    want = [rt.mgpuModuleGetFunction(m, n) for n in names]
    rt.mgpuModuleUnload(m)
    for _ in range(10):
        assert rt.mgpuModuleLoad(buf, 0) == m
        assert [rt.mgpuModuleGetFunction(m, n) for n in names] == want
        rt.mgpuModuleUnload(m)
    assert len(set(want)) == 3 and rt.stats()["function_thread_hits"] == 30
    assert rt.stats()["errors"] == 0


def test_a_lookup_through_a_live_entry_only(rt, capfd):
    """A thread's entry answers while it is live, whether or not the thread holds a load of the
    module (LLVM >= 21 code loads once, in a constructor, and looks its kernel up before every
    launch); another thread (no entry) goes the full way; once the module left the table (its
    blob changed) the entry is revoked and the old handle is reported stale, as before."""
    buf = blob_buffer(ptx("k"), 4096)
    name = ctypes.create_string_buffer(b"k")
    m = rt.mgpuModuleLoad(buf, 0)  # one load, held for good (LLVM >= 21)
    f = rt.mgpuModuleGetFunction(m, name)  # noted
    locks = rt.stats()["module_lock_takes"]
    for _ in range(20):
        assert rt.mgpuModuleGetFunction(m, name) == f
    assert rt.stats()["function_thread_hits"] == 20 and rt.stats()["module_lock_takes"] == locks
    got = []
    t = threading.Thread(target=lambda: got.append(rt.mgpuModuleGetFunction(m, name)))
    t.start()
    t.join()
    assert got == [f] and rt.stats()["function_thread_hits"] == 20
    rt.mgpuModuleUnload(m)  # no load held any more (the module stays cached, the entry live)
    assert rt.mgpuModuleGetFunction(m, name) == f and rt.stats()["function_thread_hits"] == 21
    assert rt.stats()["errors"] == 0 and capfd.readouterr().err == ""
    overwrite(buf, ptx("j"))  # another blob at the same address: the old module leaves the table
    m2 = rt.mgpuModuleLoad(buf, 0)
    assert m2 and m2 != m
    assert not rt.mgpuModuleGetFunction(m, name)  # the revoked entry answers nothing
    assert rt.stats()["function_thread_hits"] == 21
    assert "mgpuModuleGetFunction" in capfd.readouterr().err


def test_load_in_one_thread_unloaded_in_another(rt, capfd):
    """A load answered by a thread's cache, unloaded by another thread: released, not an error;
    one unload more is reported as before (the handle's references are exact)."""
    buf = blob_buffer(ptx("k"))
    m = rt.mgpuModuleLoad(buf, 0)
    rt.mgpuModuleUnload(m)
    assert rt.mgpuModuleLoad(buf, 0) == m and rt.stats()["module_thread_hits"] == 1
    t = threading.Thread(target=rt.mgpuModuleUnload, args=(m,))
    t.start()
    t.join()
    assert rt.stats()["errors"] == 0 and capfd.readouterr().err == ""
    t = threading.Thread(target=rt.mgpuModuleUnload, args=(m,))
    t.start()
    t.join()
    assert rt.stats()["errors"] == 1
    assert "'mgpuModuleUnload' failed with 'MGPU_CACHED_STALE_HANDLE'" in capfd.readouterr().err
    assert rt.fake.count("cuModuleLoadData") == 1 and rt.fake.count("cuModuleUnload") == 0


def test_a_thread_exit_hands_its_loads_to_the_module(make_runtime, capfd):
    """A thread that exits holding a load its cache answered: the module stays referenced (never
    evicted), and the program's unload from another thread releases it."""
    rt = make_runtime(env={"MGPU_CACHED_MODULE_CACHE": "1"})
    buf, other = blob_buffer(ptx("k")), blob_buffer(ptx("o"))
    held = []

    def loader():
        m = rt.mgpuModuleLoad(buf, 0)
        rt.mgpuModuleUnload(m)
        held.append(rt.mgpuModuleLoad(buf, 0))  # from this thread's cache; the thread ends

    t = threading.Thread(target=loader)
    t.start()
    t.join()
    m = held[0]
    assert rt.stats()["module_thread_hits"] == 1
    for _ in range(2):  # another module through the one place kept unreferenced
        rt.mgpuModuleUnload(rt.mgpuModuleLoad(other, 0))
    assert rt.fake.count("cuModuleUnload") == 0  # m is referenced: never the one evicted
    assert rt.mgpuModuleGetFunction(m, b"k")
    rt.mgpuModuleUnload(m)  # m unreferenced now: beyond the limit with `other`, the older goes
    assert rt.fake.count("cuModuleUnload") == 1
    assert rt.mgpuModuleLoad(buf, 0) == m  # m was the newer: kept
    assert rt.stats()["errors"] == 0 and capfd.readouterr().err == ""


def test_a_changed_blob_is_never_answered_from_a_thread_cache(rt):
    buf = blob_buffer(ptx("a"), 4096)
    m, _ = llvm19_step(rt, buf, b"a")
    assert llvm19_step(rt, buf, b"a")[0] == m and rt.stats()["module_thread_hits"] == 1
    overwrite(buf, ptx("b"))
    m2 = rt.mgpuModuleLoad(buf, 0)
    assert m2 != m and rt.fake.count("cuModuleLoadData") == 2
    assert rt.mgpuModuleGetFunction(m2, b"b") and rt.stats()["module_stale"] == 1
    rt.mgpuModuleUnload(m2)
    assert rt.mgpuModuleLoad(buf, 0) == m2  # the new module is the thread's from now on
    assert rt.stats()["module_thread_hits"] == 2 and rt.stats()["errors"] == 0


def test_replacement_by_another_thread_ends_this_threads_hits(rt):
    """Another thread finds a different blob at the address: the module leaves the table and this
    thread's entry is revoked, so even when the old bytes come back, the thread gets the module
    the table holds, as every other thread does."""
    old, new = ptx("a"), ptx("b")
    buf = blob_buffer(old, 4096)
    m, _ = llvm19_step(rt, buf, b"a")
    assert llvm19_step(rt, buf, b"a")[0] == m and rt.stats()["module_thread_hits"] == 1
    got = []

    def replacer():
        overwrite(buf, new)
        got.append(rt.mgpuModuleLoad(buf, 0))
        rt.mgpuModuleUnload(got[0])
        overwrite(buf, old)
        got.append(rt.mgpuModuleLoad(buf, 0))  # the old bytes again: a third module
        rt.mgpuModuleUnload(got[1])

    t = threading.Thread(target=replacer)
    t.start()
    t.join()
    assert len(set([m, *got])) == 3
    assert rt.mgpuModuleLoad(buf, 0) == got[1]  # the table's module, not the thread's old one
    assert rt.fake.count("cuModuleLoadData") == 3 and rt.stats()["errors"] == 0


def test_threads_loading_side_by_side_keep_references_exact(make_runtime, capfd):
    """Several threads run the LLVM <= 20 pattern over more blobs than the cache keeps, so
    evictions revoke entries while other threads hit them: no error, every launch made, and at
    the end every module loaded is unloaded but those still cached."""
    rt = make_runtime(env={"MGPU_CACHED_MODULE_CACHE": "2"})
    bufs = [blob_buffer(ptx(f"k{i}")) for i in range(4)]
    n = 300

    def worker(w):
        for i in range(n):
            b = (w + i) % len(bufs) if i % 7 == 0 else w % len(bufs)
            llvm19_step(rt, bufs[b], f"k{b}".encode())

    ts = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    s = rt.stats()
    assert s["errors"] == 0 and capfd.readouterr().err == ""
    assert rt.fake.launches() == 4 * n and s["module_thread_hits"] > 0
    # every thread has exited: every module is unreferenced, at most 2 of them kept
    kept = rt.fake.count("cuModuleLoadData") - rt.fake.count("cuModuleUnload")
    assert kept <= 2 and s["module_loads"] == s["module_unloads"] == 4 * n


# ---- graph_launch.c: the word of launching threads ----------------------------------------------

def launch_in_turn(make_runtime, n: int, threads: int = 2, env: dict | None = None):
    """`threads` threads, each on its own stream, launching strictly in turn (round robin), n
    launches each; the runtime (graph path on, eager thresholds, `env` added)."""
    rt = make_runtime(env={"MGPU_CACHED_GRAPH": "1", **GRAPH_EAGER, **(env or {})})
    m = rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0)
    f = rt.mgpuModuleGetFunction(m, b"k")
    streams = [rt.mgpuStreamCreate() for _ in range(threads)]
    turn = [threading.Semaphore(1)] + [threading.Semaphore(0) for _ in range(threads - 1)]

    def worker(w):
        for _ in range(n):
            turn[w].acquire()
            rt.launch(f, stream=streams[w])
            turn[(w + 1) % threads].release()

    ts = [threading.Thread(target=worker, args=(w,)) for w in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return rt


def test_two_threads_launching_in_turn_take_the_graph_path(make_runtime):
    """MGPU_CACHED_GRAPH_THREADS=2 (the default): two threads launching side by side both take the
    graph path once each has made 4 launches with the word holding its bit among at most two (H100:
    the driver's graph launches from 2 threads run 1.22-1.35x its stream launches, run N1; the
    library 1.09x the driver loop at 2 threads where one thread only gave 0.96x, run N42). The
    word is written only while they find each other, never once both bits are in it."""
    n = 200
    rt = launch_in_turn(make_runtime, n)
    s = rt.stats()
    assert rt.fake.launches() == 2 * n and s["errors"] == 0
    assert s["graph_launches"] >= 2 * n - 12 and s["graph_first_launches"] == 1
    assert s["graph_launcher_stores"] <= 4
    assert rt.fake.count("cuGraphLaunch") == s["graph_launches"]


@pytest.mark.parametrize("threads,env", [(2, {"MGPU_CACHED_GRAPH_THREADS": "1"}), (3, {})])
def test_more_threads_in_turn_than_allowed_do_not_write_the_shared_word_every_launch(
        make_runtime, threads, env):
    """Threads launching strictly in turn, more of them than MGPU_CACHED_GRAPH_THREADS allows: every
    launch takes the stream path (graph launches among concurrent ones serialise in the driver), as
    before, but the shared word is written a few times, not at every launch."""
    n = 200
    rt = launch_in_turn(make_runtime, n, threads, env)
    s = rt.stats()
    assert rt.fake.launches() == threads * n and s["errors"] == 0
    # the process's first launch: the function's first too, so the stream path (graph_launch.c)
    assert s["graph_launches"] == 0 and s["graph_first_launches"] == 1
    assert s["graph_contended"] == threads * n - 1
    # a claim, then each other thread sets its bit again: was one store per launch
    assert s["graph_launcher_stores"] < (threads - 1) * n // 4


@pytest.mark.parametrize("threads,env", [(2, {"MGPU_CACHED_GRAPH_THREADS": "1"}), (3, {})])
def test_threads_launching_side_by_side_claim_the_word_at_most_every_4096_launches(
        make_runtime, threads, env):
    """More threads in turn than allowed, 10,000 launches each: each claims at its 1st, 2nd, 4th
    ... 4096th launch since its last claim, and the others set their bits again once after each
    claim (with claims every 256 launches at most: 185 stores for two threads; every launch reads
    the word, and each store makes the other threads miss on its cache line)."""
    n = 10000
    rt = launch_in_turn(make_runtime, n, threads, env)
    s = rt.stats()
    assert rt.fake.launches() == threads * n and s["graph_launches"] == 0
    assert s["graph_launcher_stores"] <= 40 * threads


def test_a_thread_launching_alone_writes_the_word_once(make_runtime):
    rt = make_runtime(env={"MGPU_CACHED_GRAPH": "1", **GRAPH_EAGER})
    m = rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0)
    f = rt.mgpuModuleGetFunction(m, b"k")
    s = rt.mgpuStreamCreate()
    for _ in range(50):
        rt.launch(f, stream=s)
    st = rt.stats()
    assert st["graph_launches"] == 49 and st["graph_first_launches"] == 1  # the first: stream
    assert st["graph_launcher_stores"] == 1


# ---- chain replay (issue 21 item 2): LLVM <= 20 code's chain costs what LLVM >= 21 code's does ----

def test_llvm19_chain_makes_the_llvm22_chains_calls_and_takes_no_lock(make_runtime):
    """A chain of K launches + one sync in both shapes, from the third chain on: the same driver
    calls in the same order (the only extra ones are two cuCtxGetId per chain: mgpuModuleLoad's
    context check, issue 19 item 5, made at the first link's load and owed by the other links'
    until the submission, chain.h), the same kernels run, and LLVM <= 20 code's load / look-up /
    unload around each link take no lock."""
    env = {"MGPU_CACHED_GRAPH": "1", "MGPU_CACHED_CHAIN": "1", "FAKECUDA_PARAM_SIZES": "8,4",
           **GRAPH_EAGER,
           "MGPU_CACHED_STREAM_HANDLES": "tagged"}
    k = 10
    logs, ran, ids = {}, {}, {}
    for shape in (22, 19):
        rt = make_runtime(env=env)
        buf = blob_buffer(ptx("f"))
        s = rt.mgpuStreamCreate()
        m0 = rt.mgpuModuleLoad(buf, 0)
        f0 = rt.mgpuModuleGetFunction(m0, b"f")

        def chain(base):
            for i in range(k):
                if shape == 19:
                    m = rt.mgpuModuleLoad(buf, 0)
                    launch(rt, rt.mgpuModuleGetFunction(m, b"f"), s, Args(base + i, 0))
                    rt.mgpuModuleUnload(m)
                else:
                    launch(rt, f0, s, Args(base + i, 0))
            rt.mgpuStreamSynchronize(s)

        for c in range(3):
            chain(1000 * c)
        before, locks = len(rt.fake.log()), rt.stats()["module_lock_takes"]
        ids[shape] = rt.fake.count("cuCtxGetId")
        chain(5000)
        logs[shape] = rt.fake.log()[before:]
        ids[shape] = rt.fake.count("cuCtxGetId") - ids[shape]
        ran[shape] = rt.fake.arg_log()
        st = rt.stats()
        assert st["module_lock_takes"] == locks and st["errors"] == 0
        assert st["chain_deferred"] == 4 * k
    assert [c for c in logs[19] if c != "cuCtxGetId"] == [c for c in logs[22] if c != "cuCtxGetId"]
    assert ids[19] - ids[22] == 2  # not k
    assert ran[19] == ran[22]


@pytest.mark.parametrize("sanitizer", ["address", "thread"])
def test_evictions_racing_with_thread_cache_hits(tmp_path, sanitizer):
    """tests/data/modcache/churn.c with 2 modules kept for 4 blobs: every thread's cache hits race
    with evictions that revoke its entries (and with a thread using given-up handles): no read of
    freed memory, no data race, no failed load or look-up."""
    exe, fake = sanitized_churn(tmp_path, sanitizer)
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake), MGPU_CACHED_MODULE_CACHE="2",
               MGPU_CACHED_STATS="1", TSAN_OPTIONS="halt_on_error=0 exitcode=66",
               ASAN_OPTIONS="detect_leaks=0")
    env.pop("MGPU_CACHED_DISABLE", None)
    p = subprocess.run([str(exe), "4", "400"], env=env, capture_output=True, text=True,
                       timeout=600)
    assert "Sanitizer" not in p.stderr, p.stderr[-4000:]
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stdout + p.stderr[-2000:]
    counts = dict(re.findall(r"^\s+(module_thread_hits|module_evictions)\s+(\d+)$", p.stderr, re.M))
    assert int(counts["module_thread_hits"]) > 0 and int(counts["module_evictions"]) > 0
