# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The trace on a real GPU (MGPU_CACHED_TRACE_GPU=1): GPU spans of a known kernel sequence agree
with cuEventElapsedTime of our own events recorded around the same launches, sit after their launches on the host clock, and
two producers on two streams show as two overlapping tracks.

The kernel `spin` waits a given number of SM clock cycles (PTX, JIT-compiled by the driver), so
each launch has a known, distinct length. The tolerances below compare two measurements of the
same thing (event timing), not a speed.
"""

import ctypes
import json
import shutil

import pytest

import mgpu_cached
from conftest import bind, blob_buffer
from gpu_support import cu, gpu, ok  # noqa: F401 (fixtures)

SPIN_PTX = b"""
.version 7.0
.target sm_52
.address_size 64
.visible .entry spin(.param .u64 cycles)
{
  .reg .u64 %rd<5>;
  .reg .pred %p;
  ld.param.u64 %rd1, [cycles];
  mov.u64 %rd2, %clock64;
LOOP:
  mov.u64 %rd3, %clock64;
  sub.u64 %rd4, %rd3, %rd2;
  setp.lt.u64 %p, %rd4, %rd1;
  @%p bra LOOP;
  ret;
}
""" + b"\0"

CYCLES = [100_000, 400_000, 200_000, 800_000]  # distinct lengths, not sorted
LEAD_CYCLES = 20_000_000  # about 10 ms: the queue-filling kernel before the timed ones


def _traced_runtime(tmp_path, monkeypatch, name):
    lib = tmp_path / f"libmgpu_cached_{name}.so"
    shutil.copyfile(mgpu_cached.library_path(), lib)
    out = tmp_path / f"{name}.json"
    monkeypatch.delenv("MGPU_CACHED_DISABLE", raising=False)
    monkeypatch.delenv("MGPU_CACHED_CUDA_DRIVER", raising=False)
    monkeypatch.setenv("MGPU_CACHED_TRACE", str(out))
    monkeypatch.setenv("MGPU_CACHED_TRACE_GPU", "1")
    rt = bind(ctypes.CDLL(str(lib)))
    rt.mgpu_cached_trace_write.restype = ctypes.c_int
    return rt, out


def _launch(rt, fn, stream, cycles):
    arg = ctypes.c_uint64(cycles)
    params = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(arg), ctypes.c_void_p))
    rt.mgpuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, stream, params, None, 1)


def _bracketed_launches(rt, fn, stream, cycles_list):
    """Launch each kernel through the library on `stream`, bracketed by a pair of our own driver
    events recorded on the same driver stream (mgpu_cached_driver_handle), and return each pair's
    cuEventElapsedTime in us: an independent timing of exactly the kernels the trace times, in the
    same run (a separate run would see other SM clocks: the spin kernel counts cycles)."""
    drv = ctypes.CDLL("libcuda.so.1")
    vp = ctypes.c_void_p
    elapsed = getattr(drv, "cuEventElapsedTime_v2", None) or drv.cuEventElapsedTime
    drv.cuEventRecord.argtypes = [vp, vp]
    pin = rt.mgpu_cached_driver_handle
    pin.restype, pin.argtypes = vp, [vp]
    driver_stream = pin(stream)
    assert driver_stream
    # A long kernel first: everything after it queues on the GPU, so no event pair also times the
    # host's launch latency (the first traced launch on a device makes the trace's events).
    _launch(rt, fn, stream, LEAD_CYCLES)
    pairs = []
    for cycles in cycles_list:
        e0, e1 = vp(), vp()
        assert drv.cuEventCreate(ctypes.byref(e0), 0) == 0
        assert drv.cuEventCreate(ctypes.byref(e1), 0) == 0
        assert drv.cuEventRecord(e0, driver_stream) == 0
        _launch(rt, fn, stream, cycles)
        assert drv.cuEventRecord(e1, driver_stream) == 0
        pairs.append((e0, e1))
    out = []
    for e0, e1 in pairs:
        assert drv.cuEventSynchronize(e1) == 0
        ms = ctypes.c_float()
        assert elapsed(ctypes.byref(ms), e0, e1) == 0
        out.append(ms.value * 1000.0)
        drv.cuEventDestroy_v2(e0)
        drv.cuEventDestroy_v2(e1)
    return out


def _spans(path):
    data = json.loads(path.read_text())
    ev = [e for e in data["traceEvents"] if e.get("ph") == "X"]
    gpu = sorted((e for e in ev if e["cat"] == "gpu"), key=lambda e: e["args"]["launch"])
    host = {e["args"]["launch"]: e for e in ev if e["name"] == "mgpuLaunchKernel"}
    return data, gpu, host


def test_gpu_spans_of_a_known_sequence_agree_with_event_timing(gpu, tmp_path, monkeypatch):
    ok(cu.cuCtxSetCurrent(gpu))
    rt, out = _traced_runtime(tmp_path, monkeypatch, "seq")
    buf = blob_buffer(SPIN_PTX)
    module = rt.mgpuModuleLoad(buf, len(SPIN_PTX))
    fn = rt.mgpuModuleGetFunction(module, b"spin")
    stream = rt.mgpuStreamCreate()
    assert module and fn and stream
    reference = _bracketed_launches(rt, fn, stream, CYCLES)
    rt.mgpuStreamSynchronize(stream)
    rt.mgpuStreamDestroy(stream)
    assert rt.mgpu_cached_trace_write() == 0
    data, spans, host = _spans(out)
    assert data["otherData"]["gpu_spans"] is True
    assert data["otherData"]["dropped_gpu_spans"] == 0
    assert [s["name"] for s in spans] == ["spin"] * (1 + len(CYCLES))  # the lead kernel first
    assert len({s["tid"] for s in spans}) == 1  # one stream, one track
    for span, ref_us, cycles in zip(spans[1:], reference, CYCLES):
        # the same kernel length, measured by the trace and by our own events
        assert abs(span["dur"] - ref_us) <= 0.1 * ref_us + 3.0, (cycles, span["dur"], ref_us)
        # on the host clock, the kernel starts after its launch call began
        launch = host[span["args"]["launch"]]
        assert span["ts"] >= launch["ts"] - 5.0, (span["ts"], launch["ts"])
    # one stream runs one kernel at a time, in launch order
    for a, b in zip(spans, spans[1:]):
        assert b["ts"] >= a["ts"] + a["dur"] - 1.0


def test_two_producers_show_as_two_overlapping_tracks(gpu, tmp_path, monkeypatch):
    ok(cu.cuCtxSetCurrent(gpu))
    rt, out = _traced_runtime(tmp_path, monkeypatch, "overlap")
    buf = blob_buffer(SPIN_PTX)
    module = rt.mgpuModuleLoad(buf, len(SPIN_PTX))
    fn = rt.mgpuModuleGetFunction(module, b"spin")
    s1, s2 = rt.mgpuStreamCreate(), rt.mgpuStreamCreate()
    assert s1 and s2 and s1 != s2
    _launch(rt, fn, s1, 2_000_000)
    _launch(rt, fn, s2, 2_000_000)
    rt.mgpuStreamSynchronize(s1)
    rt.mgpuStreamSynchronize(s2)
    assert rt.mgpu_cached_trace_write() == 0
    _, spans, _ = _spans(out)
    assert len(spans) == 2
    a, b = spans
    assert a["tid"] != b["tid"]  # a track per stream
    assert {a["args"]["stream"], b["args"]["stream"]} == {hex(s1), hex(s2)}
    overlap = min(a["ts"] + a["dur"], b["ts"] + b["dur"]) - max(a["ts"], b["ts"])
    assert overlap > 0.5 * min(a["dur"], b["dur"]), (a, b)
