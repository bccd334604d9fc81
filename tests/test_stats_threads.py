# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Statistics under threads (issue 21): the counters are per-thread blocks summed on read
(csrc/support/stats.h), so launches from many threads share no written cache line. The sums must
stay exact over threads that exited, over blocks taken over by later threads, and across fork
(tests/data/conc/stats_threads.c checks the counters in-process; here the statistics files)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from conftest import CC, DATA, ROOT


@pytest.fixture(scope="module")
def stats_threads_program(tmp_path_factory):
    if CC is None:
        pytest.skip("no C compiler")
    exe = tmp_path_factory.mktemp("stats") / "stats_threads"
    subprocess.run([CC, "-std=c11", "-D_GNU_SOURCE", "-O1", "-pthread", f"-I{ROOT / 'csrc'}",
                    f"-I{ROOT / 'csrc' / 'include'}", "-o", str(exe),
                    *map(str, sorted((ROOT / "csrc").glob("*/*.c"))),
                    str(DATA / "conc" / "stats_threads.c"), "-ldl"], check=True)
    return exe


@pytest.mark.parametrize("graph", ["1", "0"])
def test_counters_sum_over_threads_exits_and_fork(stats_threads_program, fake_driver_build,
                                                  tmp_path, graph):
    """Three waves of 8 threads (launches, load + unload pairs, lookups, a stream each), then a
    fork: every counter equals what the threads did, exited threads' blocks are taken over (no
    more blocks than live threads), and each process's statistics file counts its own work."""
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake_driver_build),
               MGPU_CACHED_STATS_FILE=str(tmp_path / "s_%p.json"), MGPU_CACHED_GRAPH=graph)
    env.pop("MGPU_CACHED_DISABLE", None)
    p = subprocess.run([str(stats_threads_program), "3", "8", "200"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.split() == ["child", "ok", "ok"], p.stdout + p.stderr
    files = [json.loads(f.read_text()) for f in tmp_path.glob("s_*.json")]
    assert len(files) == 2
    parent = next(f for f in files if not f["since_fork"])["stats"]
    child = next(f for f in files if f["since_fork"])["stats"]
    # the parent: 4 waves of 8 threads x 200 launches; the child: 1 wave, counted from the fork
    assert parent["launches"] == 4 * 8 * 200 and child["launches"] == 8 * 200
    assert parent["module_loads"] == 1 + 4 * 8 * 20 and child["module_loads"] == 1 + 8 * 20
    assert parent["module_unloads"] == 1 + 4 * 8 * 20 and child["module_unloads"] == 8 * 20
    assert parent["stream_creates"] == 32 and child["stream_creates"] == 8
    assert parent["live_streams"] == 0 and parent["errors"] == 0 and child["errors"] == 0


def test_the_library_takes_one_pthread_key(make_runtime):
    """The per-thread records (statistics block, reclaimer reader, module cache) are handed back
    at thread exit through one key (support/thread_exit.h): the library takes one of the
    process's 1024, not one per record kind. glibc hands out the lowest free key, so a key made
    before and one made after the library ran in a thread tell how many it took."""
    import ctypes
    import threading
    from conftest import blob_buffer, ptx
    libc = ctypes.CDLL(None)
    key = ctypes.c_uint()

    def next_key() -> int:
        assert libc.pthread_key_create(ctypes.byref(key), None) == 0
        k = key.value
        assert libc.pthread_key_delete(key) == 0
        return k

    rt = make_runtime()
    before = next_key()

    def work():
        m = rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0)  # the thread's module cache
        assert rt.mgpuModuleGetFunction(m, b"k")  # read under the reclaimer's epochs
        s = rt.mgpuStreamCreate()
        p = rt.mgpuMemAlloc(1 << 20, s, False)
        rt.mgpuMemFree(p, s)
        rt.mgpuStreamSynchronize(s)
        rt.mgpuStreamDestroy(s)
        rt.mgpuModuleUnload(m)
    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert rt.stats()["stream_creates"] == 1  # the statistics read (every block summed)
    assert next_key() - before == 1
