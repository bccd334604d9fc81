#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""torch_neighbour.py - issue 19 items 2 and 3 on a GPU: MLIR-style code (the installed
libmgpu_cached.so through ctypes: mgpuMemAlloc / mgpuMemFree / mgpuLaunchKernel with a tiny PTX
kernel) and PyTorch in one process.

  1a  global-mode torch.cuda.graph capture on the main thread right after MLIR code on 4 other
      threads allocated, launched and freed on its streams (the frees are pending: the library's
      reclaimer works during the capture; G2). The capture must succeed and the replay be right.
  1b  thread_local-mode capture while the MLIR threads keep allocating, launching, copying back,
      synchronising and freeing during the whole capture. Capture and MLIR values must be right.
  2   torch fills the GPU so only ~3 GiB stay free; MLIR code allocates 1.5 GiB, fills it, frees it
      (NULL stream); then torch allocates 2 GiB: must succeed (G4/G9).
Each check runs in a fresh child process, once with the library's default and once with
MGPU_CACHED_DISABLE=1 (stock behaviour). Prints one line per check and a PASS/FAIL summary.

    python3.12 benchmarks/neighbour/torch_neighbour.py [--lib PATH/libmgpu_cached.so]
"""
import ctypes
import json
import os
import subprocess
import sys
import threading
import time

PTX = rb"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry fill(.param .u64 p, .param .u32 n, .param .u32 v)
{
 .reg .pred %p<2>;
 .reg .b32 %r<8>;
 .reg .b64 %rd<5>;
 ld.param.u64 %rd1, [p];
 ld.param.u32 %r1, [n];
 ld.param.u32 %r2, [v];
 mov.u32 %r3, %ctaid.x;
 mov.u32 %r4, %ntid.x;
 mov.u32 %r5, %tid.x;
 mad.lo.s32 %r6, %r3, %r4, %r5;
 setp.ge.u32 %p1, %r6, %r1;
 @%p1 bra DONE;
 cvta.to.global.u64 %rd2, %rd1;
 mul.wide.u32 %rd3, %r6, 4;
 add.s64 %rd4, %rd2, %rd3;
 st.global.u32 [%rd4], %r2;
DONE:
 ret;
}
""" + b"\0"

GIB = 1 << 30
vp = ctypes.c_void_p


class Mlir:
    def __init__(self, path):
        L = ctypes.CDLL(path)
        L.mgpuModuleLoad.restype, L.mgpuModuleLoad.argtypes = vp, [vp, ctypes.c_size_t]
        L.mgpuModuleGetFunction.restype, L.mgpuModuleGetFunction.argtypes = vp, [vp, ctypes.c_char_p]
        L.mgpuStreamCreate.restype, L.mgpuStreamCreate.argtypes = vp, []
        L.mgpuStreamSynchronize.argtypes = [vp]
        L.mgpuStreamDestroy.argtypes = [vp]
        L.mgpuMemAlloc.restype, L.mgpuMemAlloc.argtypes = vp, [ctypes.c_uint64, vp, ctypes.c_bool]
        L.mgpuMemFree.argtypes = [vp, vp]
        L.mgpuMemcpy.argtypes = [vp, vp, ctypes.c_size_t, vp]
        L.mgpuLaunchKernel.argtypes = [vp] + [ctypes.c_longlong] * 6 + [ctypes.c_int32, vp, vp, vp,
                                                                         ctypes.c_size_t]
        self.L = L
        self.blob = ctypes.create_string_buffer(PTX, len(PTX))
        self.mod = L.mgpuModuleLoad(self.blob, len(PTX))
        self.fn = L.mgpuModuleGetFunction(self.mod, b"fill")

    def fill(self, p, n, v, stream):
        pp, nn, vv = vp(p), ctypes.c_uint32(n), ctypes.c_uint32(v)
        args = (vp * 3)(ctypes.cast(ctypes.pointer(pp), vp), ctypes.cast(ctypes.pointer(nn), vp),
                        ctypes.cast(ctypes.pointer(vv), vp))
        self.L.mgpuLaunchKernel(self.fn, (n + 255) // 256, 1, 1, 256, 1, 1, 0, stream, args, None, 3)

    def step(self, stream, n, v, check=True):
        """alloc, fill, (copy back and check), free on the stream."""
        p = self.L.mgpuMemAlloc(4 * n, stream, False)
        if not p:
            return False
        self.fill(p, n, v, stream)
        ok = True
        if check:
            host = (ctypes.c_uint32 * n)()
            self.L.mgpuMemcpy(host, p, 4 * n, stream)
            self.L.mgpuStreamSynchronize(stream)
            ok = all(x == v for x in host[:: max(1, n // 64)])
        self.L.mgpuMemFree(p, stream)
        return ok


def torch_graph(torch, mode):
    x = torch.arange(1 << 16, device="cuda", dtype=torch.float32)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm-up outside the capture, as PyTorch asks
        y = x * 2 + 1
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, capture_error_mode=mode):
        y = x * 2 + 1
        for _ in range(50):
            y = y + 1
        time.sleep(0.3)  # the capture stays open while the MLIR threads / the reclaimer work
    x.copy_(torch.arange(1 << 16, device="cuda", dtype=torch.float32) * 3)
    g.replay()
    torch.cuda.synchronize()
    want = torch.arange(1 << 16, device="cuda", dtype=torch.float32) * 3 * 2 + 1 + 50
    return bool(torch.equal(y, want))


def check_capture(lib, mode):
    import torch
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    m = Mlir(lib)
    streams = [m.L.mgpuStreamCreate() for _ in range(4)]
    stop = threading.Event()
    results = []

    def worker(i, during):
        ok = True
        k = 0
        while True:
            ok &= m.step(streams[i], 1 << 18, 1000 * i + k, check=during or k % 2 == 0)
            k += 1
            if not during and k >= 20:
                break
            if during and stop.is_set():
                break
        results.append(ok)

    during = mode != "global"
    if not during:  # 1a: MLIR work (frees pending) right before the global capture
        ths = [threading.Thread(target=worker, args=(i, False)) for i in range(4)]
        for t in ths:
            t.start()
        for t in ths:
            t.join()
        # the frees of the last steps are still pending in the library: the capture begins now
        ok_graph, err = False, ""
        try:
            ok_graph = torch_graph(torch, "global")
        except Exception as e:  # noqa: BLE001
            err = repr(e)
        return {"capture": ok_graph, "mlir": all(results), "error": err}
    ths = [threading.Thread(target=worker, args=(i, True)) for i in range(4)]
    for t in ths:
        t.start()
    time.sleep(0.05)
    ok_graph, err = False, ""
    try:
        ok_graph = torch_graph(torch, mode)
    except Exception as e:  # noqa: BLE001
        err = repr(e)
    stop.set()
    for t in ths:
        t.join()
    torch.cuda.synchronize()
    return {"capture": ok_graph, "mlir": all(results) and len(results) == 4, "error": err}


def check_memory(lib):
    import torch
    torch.zeros(1, device="cuda")
    free, total = torch.cuda.mem_get_info()
    fill_bytes = free - 3 * GIB
    filler = torch.empty(fill_bytes, dtype=torch.uint8, device="cuda") if fill_bytes > 0 else None
    torch.cuda.synchronize()
    m = Mlir(lib)
    s = m.L.mgpuStreamCreate()
    n = (3 * GIB // 2) // 4
    p = m.L.mgpuMemAlloc(4 * n, s, False)
    if not p:
        return {"mlir_alloc": False, "torch_alloc": False, "error": "mgpuMemAlloc(1.5 GiB) NULL"}
    m.fill(p, n, 7, s)
    m.L.mgpuStreamSynchronize(s)
    m.L.mgpuMemFree(p, None)
    t0 = time.monotonic()
    err, ok = "", False
    try:
        big = torch.empty(2 * GIB, dtype=torch.uint8, device="cuda")
        big.fill_(1)
        torch.cuda.synchronize()
        ok = True
    except Exception as e:  # noqa: BLE001
        err = repr(e)[:200]
    del filler
    return {"mlir_alloc": True, "torch_alloc": ok, "seconds": round(time.monotonic() - t0, 3),
            "error": err}


def child(which, lib):
    if which == "1a":
        r = check_capture(lib, "global")
    elif which == "1b":
        r = check_capture(lib, "thread_local")
    else:
        r = check_memory(lib)
    print("RESULT " + json.dumps(r), flush=True)


def main():
    args = sys.argv[1:]
    if args and args[0] == "--child":
        return child(args[1], args[2])
    lib = args[args.index("--lib") + 1] if "--lib" in args else None
    if lib is None:
        import mgpu_cached
        lib = str(mgpu_cached.library_path())
    print(f"library: {lib}")
    fails = 0
    for which, what in [("1a", "global capture after MLIR stream frees (G2)"),
                        ("1b", "thread_local capture while MLIR threads work"),
                        ("2", "torch allocates 2 GiB after MLIR freed 1.5 GiB, 3 GiB free (G4/G9)")]:
        for disable in ("0", "1"):
            env = dict(os.environ, MGPU_CACHED_DISABLE=disable)
            try:
                out = subprocess.run([sys.executable, __file__, "--child", which, lib], env=env,
                                     capture_output=True, text=True, timeout=120)
                line = [l for l in out.stdout.splitlines() if l.startswith("RESULT ")]
                r = json.loads(line[-1][7:]) if line else {"error": (out.stderr or "")[-300:],
                                                           "rc": out.returncode}
            except subprocess.TimeoutExpired:
                r = {"error": "HANG (120 s)"}
            if which == "2":
                ok = bool(r.get("torch_alloc"))
            else:
                ok = bool(r.get("capture")) and bool(r.get("mlir"))
            fails += not ok
            mode = "stock (DISABLE=1)" if disable == "1" else "mgpu-cached default"
            print(f"{'PASS' if ok else 'FAIL'}  {which} {what} | {mode} | {json.dumps(r)}",
                  flush=True)
    print(f"SUMMARY: {'PASS' if fails == 0 else 'FAIL'} ({fails} failing of 6)")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
