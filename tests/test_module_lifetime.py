# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Module lifetime and the module cache under concurrency (trust issue, parts 3-5): retired modules
free their memory while stale handles stay detected, no lock is held across a slow driver call,
concurrent dynamic shared memory raises, and blobs that end at the end of readable memory."""

import ctypes
import threading

import pytest

from conftest import blob_buffer, overwrite, ptx

vp = ctypes.c_void_p


def gated(fake):
    """Bind the fake's gate (tests/drivers/fakecuda.c, modcache section)."""
    fake.lib.fake_gate.argtypes = [ctypes.c_char_p, ctypes.c_int]
    fake.lib.fake_gate.restype = None
    fake.lib.fake_gate_waiting.restype = ctypes.c_int
    fake.lib.fake_gate_release.restype = None
    return fake.lib


def wait_for(cond, what):
    """Poll until cond() holds; a guard against a hang, not a timing threshold."""
    ev = threading.Event()
    for _ in range(3000):
        if cond():
            return
        ev.wait(0.01)
    raise AssertionError(f"never happened: {what}")


def run_in_thread(fn):
    """Run fn in a thread; returns (thread, result dict)."""
    out = {}

    def body():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - reported by the caller
            out["error"] = e
    t = threading.Thread(target=body, daemon=True)
    t.start()
    return t, out


# ---- bounded memory -------------------------------------------------------------------------------

class _Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                 "uordblks", "fordblks", "keepcost")]


def heap_in_use() -> int:
    libc = ctypes.CDLL(None)
    if not hasattr(libc, "mallinfo2"):
        pytest.skip("no mallinfo2 (glibc >= 2.33) to count heap bytes")
    libc.mallinfo2.restype = _Mallinfo2
    m = libc.mallinfo2()
    return m.uordblks + m.hblkhd


def test_retired_modules_free_their_copy_and_structures(make_runtime):
    """2000 distinct 128 KiB blobs loaded, launched and unloaded at one address with
    MGPU_CACHED_MODULE_CACHE=0: the heap grows by what the fake driver keeps per load (about 1.5 KiB)
    and no more. Before modules were freed it grew by their private copies: 2000 x 128 KiB = 250 MiB
    (the review's R3: +511 MiB for 256 KiB blobs)."""
    rt = make_runtime(env={"MGPU_CACHED_MODULE_CACHE": "0"})
    size = 128 * 1024
    buf = blob_buffer(b"", size)
    n = 2000

    def one(i):
        text = ptx(f"k{i}", pad="// " + "x" * (size - 200) + "\n")[: size - 1]
        overwrite(buf, text + b"\0")
        m = rt.mgpuModuleLoad(buf, 0)
        f = rt.mgpuModuleGetFunction(m, f"k{i}".encode())
        rt.launch(f)
        rt.mgpuModuleUnload(m)
        return m, f

    one(0)  # first use: driver, tables, thread record
    before = heap_in_use()
    handles = [one(i) for i in range(1, n)]
    grown = heap_in_use() - before
    assert rt.fake.count("cuModuleLoadData") == n and rt.fake.count("cuModuleUnload") == n
    assert rt.fake.count("cuLaunchKernel") == n and rt.stats()["errors"] == 0
    assert grown < 8 * 1024 * 1024, f"heap grew by {grown} bytes over {n} retired modules"
    # the slots were reused: few distinct slot indices among the 2000 module handles
    assert len({m & 0xFFFFFF for m, _ in handles}) <= 2
    assert len({m for m, _ in handles}) == n - 1  # yet every handle is different


def test_stale_handles_detected_after_their_slot_is_reused(make_runtime, capfd):
    rt = make_runtime(env={"MGPU_CACHED_MODULE_CACHE": "0"})
    a, b = blob_buffer(ptx("ka")), blob_buffer(ptx("kb"))
    ma = rt.mgpuModuleLoad(a, 0)
    fa = rt.mgpuModuleGetFunction(ma, b"ka")
    rt.launch(fa)
    rt.mgpuModuleUnload(ma)  # last reference, no cache: retired, its slots freed
    mb = rt.mgpuModuleLoad(b, 0)
    fb = rt.mgpuModuleGetFunction(mb, b"kb")
    # the new module and its kernel took the old slots, with a new generation
    assert (mb & 0xFFFFFF, fb & 0xFFFFFF) == (ma & 0xFFFFFF, fa & 0xFFFFFF)
    assert mb != ma and fb != fa
    capfd.readouterr()
    launches = rt.fake.count("cuLaunchKernel")
    assert rt.mgpuModuleGetFunction(ma, b"ka") is None
    assert rt.mgpuModuleGetFunction(ma, b"kb") is None  # not even a name of the new module
    rt.launch(fa)
    rt.mgpuModuleUnload(ma)
    err = capfd.readouterr().err
    assert err.count("'mgpuModuleGetFunction' failed with 'MGPU_CACHED_STALE_HANDLE'") == 2
    assert "'mgpuLaunchKernel' failed with 'MGPU_CACHED_STALE_HANDLE'" in err
    assert "'mgpuModuleUnload' failed with 'MGPU_CACHED_STALE_HANDLE'" in err
    assert rt.fake.count("cuLaunchKernel") == launches  # the stale launch reached no driver
    # the new module still works, and its slot was not disturbed by the stale calls
    rt.launch(fb)
    assert rt.fake.count("cuLaunchKernel") == launches + 1
    assert rt.mgpuModuleGetFunction(mb, b"kb") == fb
    # a generation the slot never had reads as unknown, a handle of the other table too
    never = mb + (4 << 24)
    assert rt.mgpuModuleGetFunction(never, b"kb") is None
    rt.launch(mb)  # a module handle is no function handle
    err = capfd.readouterr().err
    assert "'mgpuModuleGetFunction' failed with 'MGPU_CACHED_UNKNOWN_HANDLE'" in err
    assert "'mgpuLaunchKernel' failed with 'MGPU_CACHED_UNKNOWN_HANDLE'" in err
    rt.mgpuModuleUnload(mb)
    assert rt.fake.count("cuModuleUnload") == 2


def test_evicted_and_replaced_modules_read_stale(make_runtime, capfd):
    rt = make_runtime(env={"MGPU_CACHED_MODULE_CACHE": "1"})
    bufs = [blob_buffer(ptx(f"k{i}"), 4096) for i in range(3)]
    mods = [rt.mgpuModuleLoad(b, 0) for b in bufs]
    fns = [rt.mgpuModuleGetFunction(m, f"k{i}".encode()) for i, m in enumerate(mods)]
    for m in mods:
        rt.mgpuModuleUnload(m)  # kept: at most one, so the first two are evicted
    assert rt.fake.count("cuModuleUnload") == 2
    rt.launch(fns[0])
    rt.launch(fns[2])  # still cached: its handle works
    overwrite(bufs[2], ptx("other"))  # a different blob at the cached address
    m = rt.mgpuModuleLoad(bufs[2], 0)
    assert m != mods[2]
    rt.launch(fns[2])
    err = capfd.readouterr().err
    assert err.count("'mgpuLaunchKernel' failed with 'MGPU_CACHED_STALE_HANDLE'") == 2
    assert rt.fake.count("cuLaunchKernel") == 1


# ---- no lock across slow driver calls ------------------------------------------------------------

def test_cached_launches_and_hits_proceed_while_another_thread_jits(rt):
    """T1's JIT blocks in the driver until released; meanwhile LLVM <= 20 launches (load = cache
    hit, get, launch, unload) and LLVM 22 launches (function held) of other modules complete."""
    g = gated(rt.fake)
    held_buf, hit_buf, jit_buf = (blob_buffer(ptx(n)) for n in ("held", "hit", "jitted"))
    held = rt.mgpuModuleGetFunction(rt.mgpuModuleLoad(held_buf, 0), b"held")
    rt.mgpuModuleUnload(rt.mgpuModuleLoad(hit_buf, 0))  # cached, unreferenced
    s = rt.mgpuStreamCreate()
    g.fake_gate(b"cuModuleLoadDataEx", 1)
    jit, jit_out = run_in_thread(lambda: rt.mgpuModuleLoadJIT(jit_buf, 2, 0))
    wait_for(lambda: g.fake_gate_waiting() == 1, "the JIT blocked in the driver")

    def launches():
        for _ in range(5):
            m = rt.mgpuModuleLoad(hit_buf, 0)
            rt.launch(rt.mgpuModuleGetFunction(m, b"hit"), stream=s)
            rt.mgpuModuleUnload(m)
            rt.launch(held, stream=s)
        rt.mgpuStreamSynchronize(s)
    worker, out = run_in_thread(launches)
    worker.join(60)  # a hang guard: with the JIT still blocked, they must finish
    assert not worker.is_alive() and "error" not in out, "launches waited for the JIT"
    assert g.fake_gate_waiting() == 1  # the JIT is still in the driver
    assert rt.fake.launches() == 10
    g.fake_gate_release()
    jit.join(60)
    m = jit_out["value"]
    assert m and rt.mgpuModuleGetFunction(m, b"jitted")
    st = rt.stats()
    assert (st["module_hits"], st["errors"]) == (5, 0)


def test_second_load_of_a_blob_in_flight_waits_for_it(rt):
    """Two threads load the same blob while the first load is in the driver: one driver load, one
    handle; a load of another blob meanwhile goes ahead."""
    g = gated(rt.fake)
    buf, other = blob_buffer(ptx("k")), blob_buffer(ptx("o"))
    g.fake_gate(b"cuModuleLoadData", 1)
    t1, o1 = run_in_thread(lambda: rt.mgpuModuleLoad(buf, 0))
    wait_for(lambda: g.fake_gate_waiting() == 1, "the first load blocked in the driver")
    t2, o2 = run_in_thread(lambda: rt.mgpuModuleLoad(buf, 0))
    t3, o3 = run_in_thread(lambda: rt.mgpuModuleLoad(other, 0))
    t3.join(60)
    assert not t3.is_alive() and o3["value"]  # another blob: not held up
    assert rt.fake.count("cuModuleLoadData") == 1  # the gated call is counted once it goes on
    g.fake_gate_release()
    t1.join(60)
    t2.join(60)
    assert o1["value"] and o1["value"] == o2["value"]
    assert rt.fake.count("cuModuleLoadData") == 2  # the second thread did not load it again


@pytest.mark.parametrize("call,other", [("cuModuleLoadData", 0), ("cuDevicePrimaryCtxRetain", 2)])
def test_launch_on_one_device_while_another_device_is_set_up(make_runtime, call, other):
    """The first use of device 1 blocks in the driver (loading the module there, or creating its
    context); cache hits and launches on another device go ahead meanwhile (device 2: its own first
    use, context creation included)."""
    rt = make_runtime(devices=3)
    g = gated(rt.fake)
    buf = blob_buffer(ptx("k"))
    m = rt.mgpuModuleLoad(buf, 0)
    f = rt.mgpuModuleGetFunction(m, b"k")
    rt.launch(f)
    if call == "cuModuleLoadData":  # the context of device 1 exists, the module is not loaded there
        def setup():
            rt.mgpuSetDefaultDevice(1)
            rt.mgpuStreamDestroy(rt.mgpuStreamCreate())
        t, _ = run_in_thread(setup)
        t.join(60)
    g.fake_gate(call.encode(), 1)

    def on_device_1():
        rt.mgpuSetDefaultDevice(1)
        rt.launch(f)
    t1, _ = run_in_thread(on_device_1)
    wait_for(lambda: g.fake_gate_waiting() == 1, f"{call} blocked for device 1")

    def on_other_device():
        rt.mgpuSetDefaultDevice(other)
        for _ in range(3):
            mm = rt.mgpuModuleLoad(buf, 0)
            rt.launch(rt.mgpuModuleGetFunction(mm, b"k"))
            rt.mgpuModuleUnload(mm)
    worker, out = run_in_thread(on_other_device)
    worker.join(60)
    assert not worker.is_alive() and "error" not in out, f"device {other} waited behind {call}"
    assert rt.fake.count("cuLaunchKernel") == 4
    assert rt.fake.fake_function_device(rt.fake.fake_last_function()) == other
    g.fake_gate_release()
    t1.join(60)
    assert rt.fake.count("cuLaunchKernel") == 5
    assert rt.fake.fake_function_device(rt.fake.fake_last_function()) == 1
    assert rt.stats()["errors"] == 0


# ---- dynamic shared memory raised by racing launches ---------------------------------------------

def test_concurrent_launches_with_different_smem_leave_the_limit_right(make_runtime, capfd):
    """T1 raises the limit to 100000 and is held inside cuFuncSetAttribute; T2 launches with 60000
    meanwhile. Afterwards every launch with 100000 works (the fake refuses a launch above its
    function's limit, as the driver does)."""
    rt = make_runtime(env={"FAKECUDA_CHECK_SMEM": "1"})
    g = gated(rt.fake)
    f = rt.mgpuModuleGetFunction(rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0), b"k")
    g.fake_gate(b"cuFuncSetAttribute", 1)
    t1, _ = run_in_thread(lambda: rt.launch(f, smem=100000))
    wait_for(lambda: g.fake_gate_waiting() == 1, "T1 inside cuFuncSetAttribute")
    t2, _ = run_in_thread(lambda: rt.launch(f, smem=60000))
    # give T2 the chance to race (it must not lower the limit T1 set, whenever it runs)
    t2.join(1)
    g.fake_gate_release()
    t1.join(60)
    t2.join(60)
    for smem in (100000, 100000, 60000, 100000):
        rt.launch(f, smem=smem)
    assert "failed" not in capfd.readouterr().err
    assert rt.fake.count("cuLaunchKernel") == 6
    assert rt.fake.fake_function_smem_limit(rt.fake.fake_last_function()) == 100000
    assert rt.fake.count("cuFuncSetAttribute") == 1  # 60000 never needed a call of its own


# ---- blobs at the end of readable memory ---------------------------------------------------------

PROT_NONE, PROT_RW = 0, 3
MAP_PRIVATE_ANON = 0x02 | 0x20


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = vp
    libc.mmap.argtypes = [vp, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                          ctypes.c_long]
    libc.munmap.argtypes = [vp, ctypes.c_size_t]
    libc.mprotect.argtypes = [vp, ctypes.c_size_t, ctypes.c_int]
    return libc


def at_page_end(data: bytes, after: str) -> int:
    """`data` written so that it ends exactly at the end of a page whose next page is unmapped or
    PROT_NONE; returns its address."""
    import mmap as _mmap
    libc, pg = _libc(), _mmap.PAGESIZE
    base = libc.mmap(None, 2 * pg, PROT_RW, MAP_PRIVATE_ANON, -1, 0)
    assert base and base != ctypes.c_void_p(-1).value
    if after == "unmapped":
        assert libc.munmap(base + pg, pg) == 0
    else:
        assert libc.mprotect(base + pg, pg, PROT_NONE) == 0
    addr = base + pg - len(data)
    ctypes.memmove(addr, data, len(data))
    return addr


_ELF_HEAD = b"\x7fELF\x02\x01\x01" + b"\0" * 57  # a 64-byte ELF header


@pytest.mark.parametrize("after", ["unmapped", "prot_none"])
@pytest.mark.parametrize("name,data", [
    ("ptx-1", b"\n"), ("ptx-no-nul", b"//\n.version 8.0\n"), ("elf-1", b"\x7f"),
    ("elf-2", b"\x7fE"), ("elf-header-cut", _ELF_HEAD[:40]), ("fatbin-1", b"\x50"),
    ("fatbin-2", b"\x50\xed"), ("fatbin-header-cut", b"\x50\xed\x55\xba\x01\x00\x10\x00"),
])
def test_truncated_blob_at_the_end_of_readable_memory_is_rejected_unread(rt, capfd, name, data,
                                                                         after):
    addr = at_page_end(data, after)
    assert rt.mgpuModuleLoad(addr, 0) is None
    assert rt.mgpuModuleLoadJIT(addr, 2, 0) is None
    err = capfd.readouterr().err
    assert "'mgpuModuleLoad' failed with 'MGPU_CACHED_INVALID_IMAGE'" in err
    assert "'mgpuModuleLoadJIT' failed with 'MGPU_CACHED_INVALID_IMAGE'" in err
    assert rt.fake.count("cuModuleLoadData") == 0  # never handed to the driver


@pytest.mark.parametrize("after", ["unmapped", "prot_none"])
def test_short_text_blob_at_the_end_of_readable_memory_goes_to_the_driver(rt, capfd, after):
    """A 2-byte PTX text ("\\n\\0") is complete: the driver gets it (and rejects it), no crash."""
    addr = at_page_end(b"\n\0", after)
    assert rt.mgpuModuleLoad(addr, 0) is None
    assert "'cuModuleLoadData' failed with 'CUDA_ERROR_INVALID_IMAGE'" in capfd.readouterr().err
    assert rt.fake.count("cuModuleLoadData") == 1


@pytest.mark.parametrize("after", ["unmapped", "prot_none"])
def test_valid_blob_ending_at_the_end_of_readable_memory_loads_and_hits(rt, after):
    addr = at_page_end(ptx("edge"), after)
    m = rt.mgpuModuleLoad(addr, 0)
    assert m and rt.mgpuModuleGetFunction(m, b"edge")
    assert rt.mgpuModuleLoad(addr, 0) == m  # a hit compares up to the page end, not past it
    assert rt.fake.count("cuModuleLoadData") == 1


def test_unreadable_pointer_is_rejected(rt, capfd):
    libc, pg = _libc(), __import__("mmap").PAGESIZE
    base = libc.mmap(None, pg, PROT_RW, MAP_PRIVATE_ANON, -1, 0)
    libc.munmap(base, pg)
    for p in (base, 0x10):
        assert rt.mgpuModuleLoad(p, 0) is None
    assert capfd.readouterr().err.count("failed with 'MGPU_CACHED_INVALID_IMAGE'") == 2
    assert rt.fake.count("cuModuleLoadData") == 0


# ---- fork, and retirement racing with lock-free readers (C programs) -----------------------------

import os  # noqa: E402
import subprocess  # noqa: E402

from conftest import CC, DATA, DRIVERS, ROOT, compile_shared  # noqa: E402

MODCACHE = DATA / "modcache"


def build_with_sources(tmp_path, name, extra_flags=()):
    """The program linked with the library's sources (internal symbols visible)."""
    if CC is None:
        pytest.skip("no C compiler")
    exe = tmp_path / name
    srcs = sorted(str(p) for p in (ROOT / "csrc").glob("*/*.c"))
    r = subprocess.run([CC, "-std=c11", "-D_GNU_SOURCE", "-O1", "-g", "-pthread", *extra_flags,
                        "-I", str(ROOT / "csrc"), "-I", str(ROOT / "csrc" / "include"), "-o",
                        str(exe), str(MODCACHE / f"{name}.c"), *srcs, "-ldl"],
                       capture_output=True, text=True)
    if r.returncode != 0 and extra_flags:
        pytest.skip(f"cannot build with {' '.join(extra_flags)}: {r.stderr[:200]}")
    assert r.returncode == 0, r.stderr
    return exe


def library_registers_fork_handlers() -> bool:
    return any("pthread_atfork" in p.read_text() for p in (ROOT / "csrc").glob("*/*.c"))


@pytest.mark.parametrize("handlers", [True, False], ids=["fork-handlers", "no-handlers"])
def test_fork_while_another_thread_is_loading(tmp_path, fake_driver_build, handlers):
    """fork while another thread's mgpuModuleLoad is inside the driver: the child's loads and
    launches complete. With the fork handlers (registered by the library, or by the program where
    the library does not), the parent's handles read as stale in the child and the child loads and
    initialises afresh; without them (the case of no-handlers), no lock is held across the load."""
    if not handlers and library_registers_fork_handlers():
        pytest.skip("the library registers its fork handlers itself")
    exe = build_with_sources(tmp_path, "fork_load")
    args = (["expect"] + ([] if library_registers_fork_handlers() else ["register"])
            if handlers else [])
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake_driver_build))
    env.pop("MGPU_CACHED_DISABLE", None)
    p = subprocess.run([str(exe), *args], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "child ok" in p.stdout and "parent ok" in p.stdout
    if handlers:
        assert "'mgpuModuleGetFunction' failed with 'MGPU_CACHED_STALE_HANDLE'" in p.stderr
        assert "'mgpuLaunchKernel' failed with 'MGPU_CACHED_STALE_HANDLE'" in p.stderr


def sanitized_churn(tmp_path, sanitizer):
    """tests/data/modcache/churn.c and the fake driver built with -fsanitize=`sanitizer` (the test
    is skipped where such programs do not run): (executable, fake driver)."""
    flag = f"-fsanitize={sanitizer}"
    exe = build_with_sources(tmp_path, "churn", [flag])
    probe = subprocess.run([str(exe), "1", "1"], capture_output=True, text=True,
                           env=dict(os.environ, MGPU_CACHED_CUDA_DRIVER="/nonexistent"))
    if "Sanitizer" in probe.stderr and "failed" not in probe.stderr and probe.returncode not in (0, 1):
        pytest.skip(f"{sanitizer} sanitizer programs do not run here: {probe.stderr[:200]}")
    return exe, compile_shared(DRIVERS / "fakecuda.c", tmp_path / "libfake_san.so", [flag])


@pytest.mark.parametrize("sanitizer", ["address", "thread"])
def test_retirement_racing_with_lock_free_readers(tmp_path, sanitizer):
    """Workers load, launch and unload (each last unload retires the module and frees it) while a
    thread keeps using handles they gave up: no read of freed memory, no data race."""
    exe, fake = sanitized_churn(tmp_path, sanitizer)
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake), MGPU_CACHED_MODULE_CACHE="0",
               TSAN_OPTIONS="halt_on_error=0 exitcode=66", ASAN_OPTIONS="detect_leaks=0")
    env.pop("MGPU_CACHED_DISABLE", None)
    p = subprocess.run([str(exe), "4", "400"], env=env, capture_output=True, text=True,
                       timeout=600)
    assert "Sanitizer" not in p.stderr, p.stderr[-4000:]
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stdout + p.stderr[-2000:]
    assert "MGPU_CACHED_STALE_HANDLE" in p.stderr  # the late thread did use given-up handles
