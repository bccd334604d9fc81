# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The timeline trace (MGPU_CACHED_TRACE, csrc/trace*.c) against the recording fake driver: the file
is valid Chrome trace-event JSON (ordering, nesting, thread ids, exact counts, arguments), GPU spans
come from timing events without ever blocking, memory is bounded, the file is written however the
process ends (return, exit() from a destructor, calls in global destructors, fork), one file per
process; NVTX ranges reach an injected tool; `mgpu-cached trace` and `mgpu-cached report`."""

import ctypes
import json
import os
import subprocess
import sys
import threading

import pytest

import mgpu_cached
from conftest import DATA, DRIVERS, blob_buffer, compile_program, compile_shared, ptx
from mgpu_cached import trace as trace_py
from test_mlir_programs import build as build_mlir

ROOT = DATA.parent.parent


def traced(make_runtime, tmp_path, gpu=False, limit=None, name="t.json"):
    out = tmp_path / name
    env = {"MGPU_CACHED_TRACE": str(out)}
    if gpu:
        env["MGPU_CACHED_TRACE_GPU"] = "1"
    if limit is not None:
        env["MGPU_CACHED_TRACE_LIMIT"] = str(limit)
    rt = make_runtime(env=env)
    rt.lib.mgpu_cached_trace_write.restype = ctypes.c_int
    return rt, out


def write(rt, out):
    assert rt.lib.mgpu_cached_trace_write() == 0
    data = json.loads(out.read_text())
    return data, [e for e in data["traceEvents"] if e["ph"] == "X"]


def host(events, name=None):
    return [e for e in events if e["cat"] == "mgpu" and (name is None or e["name"] == name)]


def test_calls_are_valid_trace_events_with_their_arguments(make_runtime, tmp_path):
    rt, out = traced(make_runtime, tmp_path)
    buf = blob_buffer(ptx("k1", "k2"))
    m = rt.mgpuModuleLoad(buf, len(buf))
    m2 = rt.mgpuModuleLoad(buf, len(buf))  # a cache hit
    s = rt.mgpuStreamCreate()
    f = rt.mgpuModuleGetFunction(m, b"k2")
    for _ in range(3):
        rt.launch(f, smem=16, stream=s, grid=(4, 2, 1), block=(64, 1, 1))
    p = rt.mgpuMemAlloc(256, s, False)
    rt.mgpuMemFree(p, s)
    rt.mgpuStreamSynchronize(s)
    rt.mgpuStreamDestroy(s)
    s2 = rt.mgpuStreamCreate()
    rt.launch(f, stream=s2)
    rt.mgpuStreamSynchronize(s2)
    rt.mgpuStreamDestroy(s2)
    rt.mgpuModuleUnload(m2)
    data, ev = write(rt, out)
    assert data["otherData"]["mode"] == "cached" and data["otherData"]["gpu_spans"] is False
    assert data["otherData"]["dropped_records"] == 0
    names = [e["name"] for e in ev]
    assert names == ["mgpuModuleLoad", "mgpuModuleLoad", "mgpuStreamCreate",
                     "mgpuModuleGetFunction"] + ["mgpuLaunchKernel"] * 3 + [
        "mgpuMemAlloc", "mgpuMemFree", "mgpuStreamSynchronize", "mgpuStreamDestroy",
        "mgpuStreamCreate", "mgpuLaunchKernel", "mgpuStreamSynchronize", "mgpuStreamDestroy",
        "mgpuModuleUnload"]
    assert data["otherData"]["records"] == len(ev)
    ts = [e["ts"] for e in ev]
    assert ts == sorted(ts) and all(e["dur"] >= 0 for e in ev)
    assert {e["pid"] for e in data["traceEvents"]} == {os.getpid()}
    assert {e["tid"] for e in ev} == {threading.get_native_id()}
    assert all(a["ts"] + a["dur"] <= b["ts"] for a, b in zip(ev, ev[1:]))  # one thread: in order
    load1, load2 = host(ev, "mgpuModuleLoad")
    assert "module_misses" in load1["args"]["counters"]
    assert "module_hits" in load2["args"]["counters"]
    assert load1["args"]["module"] == hex(m) and load1["args"]["size"] == len(buf)
    launch = host(ev, "mgpuLaunchKernel")
    assert [e["args"]["launch"] for e in launch] == [1, 2, 3, 4]
    assert launch[0]["args"]["kernel"] == "k2" and launch[0]["args"]["grid"] == [4, 2, 1]
    assert launch[0]["args"]["block"] == [64, 1, 1] and launch[0]["args"]["smem"] == 16
    assert launch[0]["args"]["stream"] == hex(s) and launch[0]["args"]["function"] == hex(f)
    alloc = host(ev, "mgpuMemAlloc")[0]
    assert alloc["args"]["bytes"] == 256 and alloc["args"]["ptr"] == hex(p)
    create1, create2 = host(ev, "mgpuStreamCreate")
    assert "stream_creates" in create1["args"]["counters"] and create2["args"]["stream"] == hex(s2)
    # a stream handle is its driver stream, made or pooled at mgpuStreamCreate (pool.h): the
    # first makes one; the second takes it back once a poll finds it idle (the device's first
    # creates poll the parked stream: MGPU_CACHED_POOL_SPARE_AFTER); launches bind nothing
    assert "driver_stream_creates" in create1["args"]["counters"]
    assert "driver_stream_creates" not in create2["args"]["counters"]
    assert "stream_pool_hits" in create2["args"]["counters"]
    assert all("stream_binds" not in e["args"]["counters"] for e in launch)
    assert launch[3]["args"]["stream"] == hex(s2)


def test_nested_calls_are_children(make_runtime, tmp_path):
    rt, out = traced(make_runtime, tmp_path)
    data = (ctypes.c_float * 16)()
    desc = (ctypes.c_int64 * 5)(ctypes.addressof(data), ctypes.addressof(data), 0, 16, 1)
    rt.mgpuMemHostRegisterMemRef(1, desc, 4)
    _, ev = write(rt, out)
    outer, inner = ev
    assert outer["name"] == "mgpuMemHostRegisterMemRef" and outer["args"]["depth"] == 0
    assert inner["name"] == "mgpuMemHostRegister" and inner["args"]["depth"] == 1
    assert inner["args"]["bytes"] == 64
    assert outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"]
    assert rt.fake.count("cuMemHostRegister") == 1  # traced once, called once


def test_many_threads_each_get_their_own_spans(make_runtime, tmp_path):
    rt, out = traced(make_runtime, tmp_path)
    buf = blob_buffer(ptx("k"))
    m = rt.mgpuModuleLoad(buf, len(buf))
    f = rt.mgpuModuleGetFunction(m, b"k")
    tids = []

    def work():
        tids.append(threading.get_native_id())
        s = rt.mgpuStreamCreate()
        for _ in range(40):
            rt.launch(f, stream=s)
        rt.mgpuStreamSynchronize(s)
        rt.mgpuStreamDestroy(s)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    data, ev = write(rt, out)
    launches = host(ev, "mgpuLaunchKernel")
    assert len(launches) == 320 and rt.fake.launches() == 320
    for tid in tids:
        mine = [e for e in ev if e["tid"] == tid]
        assert [e["name"] for e in mine].count("mgpuLaunchKernel") == 40
        assert len({e["args"]["stream"] for e in mine if "stream" in e["args"]}) == 1
        assert all(a["ts"] + a["dur"] <= b["ts"] for a, b in zip(mine, mine[1:]))
    assert sorted({e["args"]["launch"] for e in launches}) == list(range(1, 321))
    named = {e["tid"] for e in data["traceEvents"] if e.get("name") == "thread_name"}
    assert set(tids) <= named


def test_gpu_spans_a_track_per_stream_and_never_block(make_runtime, tmp_path):
    rt, out = traced(make_runtime, tmp_path, gpu=True)
    buf = blob_buffer(ptx("a", "b"))
    m = rt.mgpuModuleLoad(buf, len(buf))
    fa, fb = rt.mgpuModuleGetFunction(m, b"a"), rt.mgpuModuleGetFunction(m, b"b")
    s1, s2 = rt.mgpuStreamCreate(), rt.mgpuStreamCreate()
    rt.fake.fake_set_busy_launches(1)  # kernels stay "running" until fake_complete
    for _ in range(3):
        rt.launch(fa, stream=s1)
        rt.launch(fb, stream=s2)
    dst = (ctypes.c_uint32 * 8)()
    rt.mgpuMemset32(dst, 7, 8, s2)
    syncs = rt.fake.counts("cuStreamSynchronize", "cuEventSynchronize", "cuCtxSynchronize")
    data, ev = write(rt, out)  # the GPU work has not finished: nothing waited for it
    assert rt.fake.counts("cuStreamSynchronize", "cuEventSynchronize",
                          "cuCtxSynchronize") == syncs
    assert [e for e in ev if e["cat"] == "gpu"] == []
    assert data["otherData"]["dropped_gpu_spans"] == 7  # still pending: not lost for good
    assert list(dst) == [7] * 8  # the fake runs the memset at once; the trace changed nothing
    rt.fake.fake_complete(s1)
    rt.fake.fake_complete(s2)
    data, ev = write(rt, out)
    assert data["otherData"]["dropped_gpu_spans"] == 0
    gpu = [e for e in ev if e["cat"] == "gpu"]
    assert sorted(e["name"] for e in gpu) == ["a"] * 3 + ["b"] * 3 + ["memset32"]
    # a track per driver stream, named after it; each span names the handle the program passed
    tracks = {}
    for e in gpu:
        tracks.setdefault(e["tid"], set()).add((e["args"]["stream"], e["args"]["driver_stream"]))
    assert sorted(h for t in tracks.values() for h, _ in t) == sorted([hex(s1), hex(s2)])
    names = {e["tid"]: e["args"] for e in data["traceEvents"]
             if e.get("name") == "thread_name" and e["tid"] in tracks}
    assert len(names) == 2 and all(len(t) == 1 for t in tracks.values())
    # named by a stable ordinal (issue 20); the driver stream only in the args
    assert sorted(a["name"] for a in names.values()) == ["GPU 0 stream 1", "GPU 0 stream 2"]
    assert all(next(iter(tracks[t]))[1] == a["stream"] for t, a in names.items())
    by_seq = {e["args"]["launch"]: e for e in host(ev, "mgpuLaunchKernel")}
    for g in gpu:
        seq = g["args"].get("launch", g["args"].get("copy"))
        if "launch" in g["args"]:
            assert by_seq[seq]["args"]["kernel"] == g["name"]
            assert by_seq[seq]["args"]["stream"] == g["args"]["stream"]
        assert g["dur"] >= 0
    flows = [e for e in data["traceEvents"] if e["ph"] in ("s", "f")]
    assert sorted(e["id"] for e in flows if e["ph"] == "s") == \
        sorted(e["id"] for e in flows if e["ph"] == "f") == sorted(
            g["args"].get("launch", g["args"].get("copy")) for g in gpu)
    assert rt.fake.fake_elapsed_calls() == 14  # two per span, nothing more
    # the timing events are pooled: 7 spans, then 7 more reuse the same events
    created = rt.fake.count("cuEventCreate")
    for _ in range(7):
        rt.launch(fa, stream=s1)
    rt.mgpuStreamSynchronize(s1)
    _, ev = write(rt, out)
    assert len([e for e in ev if e["cat"] == "gpu"]) == 14
    assert rt.fake.count("cuEventCreate") == created


def test_trace_changes_no_driver_call(make_runtime, tmp_path):
    """Host spans only: the driver sees exactly the calls of an untraced run."""
    logs = []
    for env in ({}, {"MGPU_CACHED_TRACE": str(tmp_path / "t.json")}):
        rt = make_runtime(env=env)
        buf = blob_buffer(ptx("k"))
        m = rt.mgpuModuleLoad(buf, len(buf))
        s = rt.mgpuStreamCreate()
        rt.launch(rt.mgpuModuleGetFunction(m, b"k"), stream=s)
        rt.mgpuMemcpy(ctypes.create_string_buffer(8), ctypes.create_string_buffer(8), 8, s)
        rt.mgpuStreamSynchronize(s)
        rt.mgpuStreamDestroy(s)
        logs.append(rt.fake.log())
    assert logs[0] == logs[1]


def test_off_by_default(make_runtime, monkeypatch):
    monkeypatch.delenv("MGPU_CACHED_TRACE", raising=False)
    rt = make_runtime()
    rt.lib.mgpu_cached_trace_write.restype = ctypes.c_int
    assert rt.lib.mgpu_cached_trace_write() == -1


def test_memory_is_bounded(make_runtime, tmp_path):
    rt, out = traced(make_runtime, tmp_path, limit=300)
    s = rt.mgpuStreamCreate()
    for _ in range(1000):
        rt.mgpuStreamSynchronize(s)
    data, ev = write(rt, out)
    kept = data["otherData"]["records"]
    assert kept == len(ev) == 512  # 300 rounded up to whole chunks of 256
    assert data["otherData"]["limit"] == 512
    assert kept + data["otherData"]["dropped_records"] == 1001
    assert [e["name"] for e in ev][:2] == ["mgpuStreamCreate", "mgpuStreamSynchronize"]  # first


PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "mgpu_abi.h"

static const char blob[] = "//\n.version 8.0\n.target sm_90\n.address_size 64\n"
                           ".visible .entry k(\n)\n{\n ret;\n}\n";
static void *mod;
static int mode;

static void steps(int n) {
  void *f = mgpuModuleGetFunction(mod, "k");
  void *s = mgpuStreamCreate();
  for (int i = 0; i < n; ++i) mgpuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL, 0);
  if (mode == 3) return; /* exit with the kernels' spans still unread */
  mgpuStreamSynchronize(s);
  mgpuStreamDestroy(s);
}

__attribute__((destructor)) static void at_end(void) {
  if (mode == 1) {       /* calls in a global destructor, then exit() from it */
    mgpuModuleUnload(mod);
    exit(3);
  }
}

static void hard_exit(void) { _exit(0); } /* the library's destructor never runs */

int main(int argc, char **argv) {
  mode = argc > 1 ? atoi(argv[1]) : 0;
  if (mode == 4) atexit(hard_exit); /* as under a JIT runner: runs after the library's handler */
  mod = mgpuModuleLoad((void *)blob, sizeof blob);
  steps(2);
  if (mode == 2) {       /* fork: the child traces into its own file */
    pid_t pid = fork();
    if (pid == 0) {
      steps(5);
      exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    printf("child %d\n", (int)pid);
  }
  return 0;
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return compile_program(tmp_path_factory.mktemp("traceprog"), "prog", PROGRAM,
                           ["-I", str(ROOT / "csrc" / "include"), *mgpu_cached.ldflags().split()])


def run_program(exe, fake_driver_build, env, *args):
    full = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake_driver_build), **env)
    full.pop("MGPU_CACHED_DISABLE", None)
    return subprocess.run([str(exe), *args], env=full, capture_output=True, text=True,
                          timeout=60)


def names_of(path):
    return [e["name"] for e in json.loads(path.read_text())["traceEvents"] if e["ph"] == "X"]


def test_written_when_main_returns_with_pid_in_the_name(program, fake_driver_build, tmp_path):
    p = run_program(program, fake_driver_build,
                    {"MGPU_CACHED_TRACE": str(tmp_path / "t.%p.json")})
    assert p.returncode == 0, p.stderr
    files = list(tmp_path.glob("t.*.json"))
    assert len(files) == 1
    pid = int(files[0].name.split(".")[1])
    data = json.loads(files[0].read_text())
    assert {e["pid"] for e in data["traceEvents"]} == {pid}
    assert names_of(files[0]) == ["mgpuModuleLoad", "mgpuModuleGetFunction", "mgpuStreamCreate",
                                  "mgpuLaunchKernel", "mgpuLaunchKernel",
                                  "mgpuStreamSynchronize", "mgpuStreamDestroy"]


def test_calls_in_a_destructor_that_calls_exit_are_written(program, fake_driver_build, tmp_path):
    out = tmp_path / "t.json"
    p = run_program(program, fake_driver_build, {"MGPU_CACHED_TRACE": str(out)}, "1")
    assert p.returncode == 3, p.stderr
    assert names_of(out)[-1] == "mgpuModuleUnload"  # made after the first write at exit


def test_a_forked_child_writes_its_own_file(program, fake_driver_build, tmp_path):
    out = tmp_path / "t.json"
    p = run_program(program, fake_driver_build, {"MGPU_CACHED_TRACE": str(out)}, "2")
    assert p.returncode == 0, p.stderr
    child = int(p.stdout.split()[1])
    assert names_of(out).count("mgpuLaunchKernel") == 2  # the parent's own calls
    mine = names_of(tmp_path / f"t.json.{child}")
    assert mine.count("mgpuLaunchKernel") == 5 and "mgpuModuleLoad" not in mine
    assert {e["pid"] for e in json.loads((tmp_path / f"t.json.{child}").read_text())[
        "traceEvents"]} == {child}


def test_llvm22_unload_in_a_global_destructor_is_written(tmp_path, fake_driver_build):
    exe = build_mlir(tmp_path, "empty_loop", 22)
    out = tmp_path / "t.json"
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake_driver_build),
               MGPU_CACHED_TRACE=str(out), HARNESS_NO_CHECK="1")
    env.pop("MGPU_CACHED_DISABLE", None)
    p = subprocess.run([str(exe), "5"], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    names = names_of(out)
    assert names[0] == "mgpuModuleLoad" and names[-1] == "mgpuModuleUnload"  # ctor and dtor
    assert names.count("mgpuLaunchKernel") == 5


def test_cli_trace_and_report(program, fake_driver_build, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MGPU_CACHED_CUDA_DRIVER", str(fake_driver_build))
    monkeypatch.delenv("MGPU_CACHED_DISABLE", raising=False)
    out = tmp_path / "cli.json"
    from mgpu_cached.cli import main
    assert main(["trace", "-o", str(out), "--", str(program)]) == 0
    assert names_of(out).count("mgpuLaunchKernel") == 2
    assert main(["report", str(out), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["kernels"]["k"]["launches"] == 2
    assert rep["kernels"]["k"]["gpu_spans"] == 2  # the CLI turns GPU spans on
    # the program's one look-up is the kernel's first: it asks the driver (a miss; kernels are
    # resolved at their first look-up, not at load)
    assert rep["kernels"]["k"]["lookups"] == 1 and rep["kernels"]["k"]["lookup_hits"] == 0
    launches = rep["calls"]["mgpuLaunchKernel"]  # streams are bound when made: no pool miss here
    assert (launches["count"], launches["hits"], launches["misses"]) == (2, 0, 0)
    assert rep["calls"]["mgpuModuleLoad"]["misses"] == 1
    assert main(["report", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Kernels" in text and "k " in text and "GPU streams" in text


def test_cli_trace_of_several_processes_gives_a_file_each(program, fake_driver_build, tmp_path,
                                                         monkeypatch):
    monkeypatch.setenv("MGPU_CACHED_CUDA_DRIVER", str(fake_driver_build))
    out = tmp_path / "multi.json"
    from mgpu_cached.cli import main
    code = main(["trace", "-o", str(out), "--", "sh", "-c", f"{program} & {program}; wait"])
    assert code == 0
    files = sorted(tmp_path.glob("multi.json.*"))
    assert len(files) == 2 and not out.exists()  # the shell itself made no mgpu* call
    pids = {json.loads(f.read_text())["otherData"]["pid"] for f in files}
    assert pids == {int(f.name.rsplit(".", 1)[1]) for f in files}


def test_report_overlap_and_busy_time():
    spans = {"s1": [(0.0, 10.0), (20.0, 30.0)], "s2": [(5.0, 25.0)]}
    assert trace_py._concurrent(spans) == 10.0  # 5..10 and 20..25
    assert trace_py._union(spans["s1"] + spans["s2"]) == 30.0
    assert trace_py._union([(0.0, 1.0), (0.5, 2.0), (3.0, 4.0)]) == 3.0


def test_nvtx_ranges_reach_an_injected_tool(make_runtime, tmp_path, monkeypatch):
    tool = compile_shared(DRIVERS / "fakenvtx.c", tmp_path / "libfakenvtx.so")
    monkeypatch.delenv("MGPU_CACHED_TRACE", raising=False)
    rt = make_runtime(env={"NVTX_INJECTION64_PATH": str(tool)})
    buf = blob_buffer(ptx("kern"))
    m = rt.mgpuModuleLoad(buf, len(buf))
    s = rt.mgpuStreamCreate()
    rt.launch(rt.mgpuModuleGetFunction(m, b"kern"), stream=s)
    rt.mgpuStreamSynchronize(s)
    nv = ctypes.CDLL(str(tool))
    nv.fakenvtx_log.restype = ctypes.c_char_p
    assert nv.fakenvtx_log().decode().split(",") == [
        "mgpuModuleLoad", "pop", "mgpuStreamCreate", "pop", "kern", "pop", "kern", "pop",
        "mgpuStreamSynchronize", "pop"]
    rt.lib.mgpu_cached_trace_write.restype = ctypes.c_int
    assert rt.lib.mgpu_cached_trace_write() == -1  # NVTX only: no file


def test_hip_backend_host_spans(make_hip_runtime, tmp_path):
    out = tmp_path / "hip.json"
    rt = make_hip_runtime(env={"MGPU_CACHED_TRACE": str(out)})
    rt.lib.mgpu_cached_trace_write.restype = ctypes.c_int
    buf = blob_buffer(ptx("hk"))
    m = rt.mgpuModuleLoad(buf, len(buf))
    s = rt.mgpuStreamCreate()
    rt.launch(rt.mgpuModuleGetFunction(m, b"hk"), stream=s)
    rt.mgpuStreamSynchronize(s)
    data, ev = write(rt, out)
    assert data["otherData"]["backend"] == "hip"
    launch, = host(ev, "mgpuLaunchKernel")
    assert launch["args"]["kernel"] == "hk" and launch["args"]["stream"] == hex(s)


def test_gpu_spans_read_back_at_exit_before_the_driver_is_torn_down(program, fake_driver_build,
                                                                     tmp_path):
    out = tmp_path / "t.json"
    p = run_program(program, fake_driver_build, {
        "MGPU_CACHED_TRACE": str(out), "MGPU_CACHED_TRACE_GPU": "1",
        "FAKECUDA_DEINIT_AT_EXIT": "1"}, "3")  # the fake's exit handler tears the driver down
    assert p.returncode == 0, p.stderr
    assert "fakecuda: 0 calls after the driver was torn down" in p.stdout
    data = json.loads(out.read_text())
    gpu = [e for e in data["traceEvents"] if e.get("cat") == "gpu"]
    assert [e["name"] for e in gpu] == ["k", "k"]
    assert data["otherData"]["dropped_gpu_spans"] == 0


def test_written_when_library_destructors_never_run(program, fake_driver_build, tmp_path):
    """Under mlir-runner no library destructor runs: the at-exit handler registered at the first
    traced call writes the file (here an earlier handler calls _exit after it)."""
    out = tmp_path / "t.json"
    p = run_program(program, fake_driver_build, {"MGPU_CACHED_TRACE": str(out)}, "4")
    assert p.returncode == 0, p.stderr
    assert names_of(out).count("mgpuLaunchKernel") == 2


# ---- report: streams by ordinal, any input answered in one line ---------------------------------

def gpu_span(name, ts, dur, tid, driver_stream, pid=7, device=0):
    return {"name": name, "cat": "gpu", "ph": "X", "ts": ts, "dur": dur, "pid": pid, "tid": tid,
            "args": {"stream": "0x1", "driver_stream": driver_stream, "device": device,
                     "launch": 1, "call": "mgpuLaunchKernel"}}


def test_report_names_streams_by_ordinal_in_the_order_they_first_ran(make_runtime, tmp_path,
                                                                     capsys):
    rt, out = traced(make_runtime, tmp_path, gpu=True)
    buf = blob_buffer(ptx("a", "b"))
    m = rt.mgpuModuleLoad(buf, len(buf))
    fa, fb = rt.mgpuModuleGetFunction(m, b"a"), rt.mgpuModuleGetFunction(m, b"b")
    s1, s2 = rt.mgpuStreamCreate(), rt.mgpuStreamCreate()
    for _ in range(2):
        rt.launch(fb, stream=s2)  # s2 runs first
        rt.launch(fa, stream=s1)
    rt.mgpuStreamSynchronize(s1)
    rt.mgpuStreamSynchronize(s2)
    data, ev = write(rt, out)
    gpu = sorted((e for e in ev if e["cat"] == "gpu"), key=lambda e: e["ts"])
    first, second = gpu[0]["args"]["driver_stream"], next(
        e["args"]["driver_stream"] for e in gpu if e["args"]["driver_stream"] != gpu[0]["args"][
            "driver_stream"])
    from mgpu_cached.cli import main
    assert main(["report", str(out)]) == 0
    text = capsys.readouterr().out
    table = text[text.index("GPU streams"):].splitlines()
    assert [r.split()[:3] for r in table[3:5]] == [["stream", "1", "0"], ["stream", "2", "0"]]
    assert "0x" not in text  # no pointer in the tables
    assert main(["report", str(out), "--json"]) == 0
    streams = json.loads(capsys.readouterr().out)["streams"]
    assert list(streams) == ["stream 1", "stream 2"]
    assert (streams["stream 1"]["driver_stream"], streams["stream 2"]["driver_stream"]) == \
        (first, second)
    assert streams["stream 1"]["spans"] == streams["stream 2"]["spans"] == 2


def test_report_stream_ordinals_are_numbers_not_pointers():
    """Eleven streams whose pointers sort the other way round: named 1..11 by first start, in
    numeric order (stream 10 after stream 9), the same names for the same trace every time."""
    events = [gpu_span("k", 100.0 * i, 10.0, 1000 + i, hex(0xfff - i)) for i in range(11)]
    events.reverse()  # the file order does not decide, the start does
    s = trace_py.summarize([{"traceEvents": events}])
    assert list(s.streams) == [f"stream {n}" for n in range(1, 12)]
    assert [v["driver_stream"] for v in s.streams.values()] == [hex(0xfff - i) for i in range(11)]
    assert trace_py.summarize([{"traceEvents": events}]).streams == s.streams
    two = trace_py.summarize([{"traceEvents": [gpu_span("k", 5.0, 1.0, 1, "0xa", pid=9)]},
                              {"traceEvents": [gpu_span("k", 1.0, 1.0, 1, "0xb", pid=3)]}])
    assert list(two.streams) == ["pid 3 stream 1", "pid 9 stream 1"]


def test_report_plot_labels_streams_by_ordinal(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure
    seen = []
    monkeypatch.setattr(Figure, "savefig", lambda self, *a, **k: seen.append(self))
    events = [gpu_span("k", 10.0, 5.0, 2000, "0x55bde2b88d20"),
              gpu_span("k", 12.0, 5.0, 2001, "0x55bde2b00000"),
              {"name": "thread_name", "ph": "M", "pid": 7, "tid": 2000,
               "args": {"name": "GPU 0 stream 0x55bde2b88d20"}}]
    traces = [{"traceEvents": events}]
    assert trace_py.plot(traces, trace_py.summarize(traces), str(tmp_path / "p.png")) is None
    labels = [t.get_text() for t in seen[0].axes[0].get_yticklabels()]
    assert labels == ["stream 1", "stream 2"]


BAD_TRACES = {
    "wrong-shape.json": ('{"traceEvents": 5}', "not a trace (traceEvents is a number, not an "
                         "array)"),
    "null-dur.json": ('{"traceEvents": [{"name": "mgpuLaunchKernel", "ph": "X", "ts": 1, '
                      '"dur": null}]}', "event 0 ('mgpuLaunchKernel'): \"dur\" is null, not a "
                      "number"),
    "no-ts.json": ('[{"name": "k", "cat": "gpu", "ph": "X", "dur": 1}]',
                   "event 0 ('k'): \"ts\" is null, not a number"),
    "not-json.json": ("this is not JSON\n", "not JSON (Expecting value at line 1 column 1)"),
    "scalar.json": ("42", "not a trace (the file holds a number, not an object with "
                    "traceEvents)"),
    "no-events.json": ('{"otherData": {}}', "not a trace (no traceEvents)"),
    "bad-event.json": ('{"traceEvents": [{"ph": "X", "ts": 0, "dur": 1}, "x"]}',
                       "event 1 is a string, not an object"),
    "bad-args.json": ('[{"name": "k", "ph": "X", "ts": 0, "dur": 1, "args": [1]}]',
                      "event 0 ('k'): \"args\" is an array, not an object"),
    "bad-counters.json": ('[{"name": "k", "ph": "X", "ts": 0, "dur": 1, "args": '
                          '{"counters": 3}}]', "event 0 ('k'): args \"counters\" is a number, "
                          "not an array"),
    "bad-pid.json": ('[{"name": "k", "ph": "X", "ts": 0, "dur": 1, "pid": [1]}]',
                     "event 0 ('k'): \"pid\" is an array, not an integer"),
    "bad-other.json": ('{"traceEvents": [], "otherData": 1}',
                       "otherData is a number, not an object"),
}


@pytest.mark.parametrize("name", sorted(BAD_TRACES))
def test_report_on_a_bad_file_is_one_line_naming_it(name, tmp_path, capsys):
    text, what = BAD_TRACES[name]
    path = tmp_path / name
    path.write_text(text)
    from mgpu_cached.cli import main
    assert main(["report", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err == f"mgpu-cached: report: {path}: {what}\n"


def test_report_on_a_missing_file_binary_file_or_folder(tmp_path, capsys):
    from mgpu_cached.cli import main
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00")
    for path, what in ((tmp_path / "missing.json", "No such file or directory"),
                       (tmp_path / "bin.json", "not a trace (not UTF-8 text)"),
                       (tmp_path, "Is a directory")):
        assert main(["report", str(path)]) == 1
        assert capsys.readouterr() == ("", f"mgpu-cached: report: {path}: {what}\n")


def test_report_through_the_command_has_no_traceback(tmp_path):
    bad = tmp_path / "t.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "ts": 0, "dur": null}]}')
    p = subprocess.run([sys.executable, "-m", "mgpu_cached", "report", str(bad)],
                       capture_output=True, text=True)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr == f"mgpu-cached: report: {bad}: event 0: \"dur\" is null, not a number\n"
