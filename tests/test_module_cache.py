# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Module cache: one driver load per blob, verified hits, functions resolved once per device."""

import ctypes

import pytest

from conftest import blob_buffer, elf, fatbin, overwrite, ptx


@pytest.mark.parametrize("make_blob", [ptx, fatbin, elf], ids=["ptx", "fatbin", "cubin-elf"])
def test_llvm19_pattern_loads_once(rt, make_blob):
    """LLVM <= 20 code loads, resolves and unloads around every launch: one driver load, and
    only the kernel it asks for is resolved (once)."""
    blob = make_blob("k_add", "k_mul")
    buf = blob_buffer(blob)
    modules, functions = set(), set()
    for _ in range(200):
        m = rt.mgpuModuleLoad(buf, len(buf))
        f = rt.mgpuModuleGetFunction(m, b"k_add")
        s = rt.mgpuStreamCreate()
        rt.launch(f, stream=s)
        rt.mgpuStreamSynchronize(s)
        rt.mgpuStreamDestroy(s)
        rt.mgpuModuleUnload(m)
        modules.add(m)
        functions.add(f)
    assert len(modules) == 1 and len(functions) == 1 and None not in modules
    c = rt.fake.counts("cuModuleLoadData", "cuModuleUnload", "cuModuleGetFunction",
                       "cuLaunchKernel", "cuStreamCreate", "cuStreamDestroy", "cuLibraryLoadData",
                       "cuKernelGetFunction", "cuDeviceGetAttribute")
    c["cuLaunchKernel"] += rt.fake.count("cuGraphLaunch")  # the graph launch path (issue 12)
    assert c == {"cuModuleLoadData": 1, "cuModuleUnload": 0, "cuModuleGetFunction": 1,
                 "cuLaunchKernel": 200, "cuStreamCreate": 2, "cuStreamDestroy": 0,
                 "cuLibraryLoadData": 0, "cuKernelGetFunction": 0, "cuDeviceGetAttribute": 0}
    s = rt.stats()
    assert (s["module_loads"], s["module_hits"], s["module_misses"]) == (200, 199, 1)
    assert s["verify_bytes"] == 199 * len(blob)  # every hit compared the whole blob


def test_per_launch_driver_calls(rt):
    """A launch costs the launch itself plus a look at the current context: nothing else (a bare
    launch: no push in a thread with none current, test_bare_launch.py)."""
    buf = blob_buffer(ptx("k"))
    m = rt.mgpuModuleLoad(buf, 0)
    f = rt.mgpuModuleGetFunction(m, b"k")
    s = rt.mgpuStreamCreate()
    rt.launch(f, stream=s)  # the function's first launch (the stream path)
    rt.launch(f, stream=s)  # the graph path builds its exec (if on)
    rt.fake.fake_reset()
    for _ in range(10):
        rt.mgpuModuleGetFunction(m, b"k")
        rt.launch(f, stream=s)
    launch = "cuGraphLaunch" if rt.stats()["graph_launches"] else "cuLaunchKernel"  # issue 12
    assert rt.fake.log() == ["cuCtxGetCurrent", launch] * 10


def test_a_thread_without_a_current_context_looks_once_per_256_enters(make_runtime):
    """Where a launch pushes (MGPU_CACHED_BARE_LAUNCH=0 here; by default the NULL stream and
    foreign streams): the look (cuCtxGetCurrent) comes back every 256 pushes, and once the program
    has made the context current itself the pushes stop at the next look."""
    rt = make_runtime(env={"MGPU_CACHED_BARE_LAUNCH": "0"})
    m = rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0)
    f = rt.mgpuModuleGetFunction(m, b"k")
    s = rt.mgpuStreamCreate()
    rt.launch(f, stream=s)
    rt.fake.fake_reset()
    for _ in range(1024):
        rt.launch(f, stream=s)
    c = rt.fake.counts("cuCtxGetCurrent", "cuCtxPushCurrent", "cuCtxPopCurrent")
    assert c["cuCtxPushCurrent"] == c["cuCtxPopCurrent"] == 1024
    assert 3 <= c["cuCtxGetCurrent"] <= 4  # one look per 257 enters (the look pushes too)
    ctx = ctypes.c_void_p()
    assert rt.fake.lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
    assert rt.fake.lib.cuCtxSetCurrent(ctx) == 0
    for _ in range(257):
        rt.launch(f, stream=s)
    rt.fake.fake_reset()
    for _ in range(10):
        rt.launch(f, stream=s)
    assert rt.fake.counts("cuCtxGetCurrent", "cuCtxPushCurrent") == {"cuCtxGetCurrent": 10,
                                                                     "cuCtxPushCurrent": 0}


def test_seventy_live_modules_each_keep_their_own_kernel(rt):
    """The handle tables grow in doubling chunks (slot_table.h: slots 0-15, 16-31, 32-63,
    64-127): 70 modules live at once, each with its own kernel, are each found again through
    their handles, and each handle launches its own driver function."""
    bufs = [blob_buffer(ptx(f"k{i}")) for i in range(70)]
    mods = [rt.mgpuModuleLoad(b, 0) for b in bufs]
    fns = [rt.mgpuModuleGetFunction(m, f"k{i}".encode()) for i, m in enumerate(mods)]
    assert len(set(mods)) == 70 and len(set(fns)) == 70 and all(fns)
    s = rt.mgpuStreamCreate()
    driver = []
    for i in (69, 64, 63, 32, 31, 16, 15, 0):
        assert rt.mgpuModuleGetFunction(mods[i], f"k{i}".encode()) == fns[i]
        rt.launch(fns[i], stream=s)
        driver.append(rt.fake.fake_last_function())
    assert len(set(driver)) == 8
    assert rt.fake.count("cuModuleLoadData") == 70 and rt.fake.count("cuModuleGetFunction") == 70
    for m in mods:
        rt.mgpuModuleUnload(m)


def test_reused_address_never_returns_stale_module(rt):
    buf = blob_buffer(ptx("old_kernel"), 4096)
    m1 = rt.mgpuModuleLoad(buf, 0)
    assert rt.mgpuModuleGetFunction(m1, b"old_kernel")
    rt.mgpuModuleUnload(m1)
    overwrite(buf, ptx("new_kernel"))  # same address, different blob
    m2 = rt.mgpuModuleLoad(buf, 0)
    assert m2 and m2 != m1
    f = rt.mgpuModuleGetFunction(m2, b"new_kernel")
    assert f
    rt.launch(f)
    assert rt.fake.count("cuModuleLoadData") == 2
    assert rt.fake.count("cuModuleUnload") == 1  # the old module had no user left
    assert rt.stats()["module_stale"] == 1
    # the old handle is recognised as stale, not a crash
    assert rt.mgpuModuleGetFunction(m1, b"old_kernel") is None


def test_reused_address_while_old_module_still_held(rt):
    buf = blob_buffer(ptx("a_kernel"), 4096)
    m1 = rt.mgpuModuleLoad(buf, 0)
    f1 = rt.mgpuModuleGetFunction(m1, b"a_kernel")
    overwrite(buf, ptx("b_kernel"))
    m2 = rt.mgpuModuleLoad(buf, 0)
    assert m2 != m1
    assert rt.mgpuModuleGetFunction(m2, b"b_kernel")
    rt.launch(f1)  # the old module still works for its holder
    assert rt.fake.count("cuLaunchKernel") == 1
    assert rt.fake.count("cuModuleUnload") == 0
    rt.mgpuModuleUnload(m1)  # last reference: now really unloaded
    assert rt.fake.count("cuModuleUnload") == 1
    m3 = rt.mgpuModuleLoad(buf, 0)
    assert m3 == m2  # the new blob is the cached one now


@pytest.mark.parametrize("make_blob", [ptx, fatbin, elf], ids=["ptx", "fatbin", "cubin-elf"])
def test_length_comes_from_the_blob_header(rt, make_blob):
    """Bytes inside the blob's own length are checked; bytes after it are not part of it."""
    blob = make_blob("k_one")
    buf = blob_buffer(blob, len(blob) + 64)
    m = rt.mgpuModuleLoad(buf, 0)
    overwrite(buf, blob + b"trailing bytes that are not part of the blob")
    assert rt.mgpuModuleLoad(buf, 0) == m
    assert rt.fake.count("cuModuleLoadData") == 1
    changed = bytearray(blob)
    changed[len(blob) - 20] ^= 0x01  # one bit, near the end of the blob
    overwrite(buf, bytes(changed))
    assert rt.mgpuModuleLoad(buf, 0) != m
    assert rt.fake.count("cuModuleLoadData") == 2


def test_jit_load_cached_per_opt_level(rt):
    buf = blob_buffer(ptx("jk"))
    a = rt.mgpuModuleLoadJIT(buf, 2, 0)
    b = rt.mgpuModuleLoadJIT(buf, 2, 0)
    c = rt.mgpuModuleLoadJIT(buf, 3, 0)
    assert a == b and c != a
    assert rt.fake.count("cuModuleLoadDataEx") == 2
    assert rt.mgpuModuleGetFunction(c, b"jk")


def test_functions_resolved_at_first_lookup_and_once_per_device(make_runtime):
    """The module is loaded in the thread's device's context at mgpuModuleLoad (as the stock
    wrapper's cuModuleLoadData), nothing resolved; a kernel is found on the thread's device at its
    first mgpuModuleGetFunction (the stock wrapper's cuModuleGetFunction); on another device the
    module is loaded and every kernel found so far resolved at the first launch there, and a
    kernel found later also on every device where the module's kernels already ran."""
    rt = make_runtime(devices=2)
    buf = blob_buffer(ptx("k1", "k2", "k3"))
    m = rt.mgpuModuleLoad(buf, 0)  # thread default device: 0
    assert rt.fake.count("cuModuleGetFunction") == 0 and rt.fake.count("cuModuleLoadData") == 1
    f1 = rt.mgpuModuleGetFunction(m, b"k1")
    f2 = rt.mgpuModuleGetFunction(m, b"k2")
    assert rt.fake.count("cuModuleGetFunction") == 2  # each on device 0, when asked for
    assert rt.mgpuModuleGetFunction(m, b"k1") == f1
    assert rt.fake.count("cuModuleGetFunction") == 2
    rt.mgpuSetDefaultDevice(1)
    rt.launch(f1)
    assert rt.fake.fake_function_device(rt.fake.fake_last_function()) == 1
    assert rt.fake.count("cuModuleLoadData") == 2  # its module on device 1, at its first need
    assert rt.fake.count("cuModuleGetFunction") == 4  # every kernel found so far, on device 1
    rt.launch(f2)
    assert rt.fake.count("cuModuleGetFunction") == 4
    f3 = rt.mgpuModuleGetFunction(m, b"k3")  # on device 1 (the thread's) only
    assert rt.fake.count("cuModuleGetFunction") == 5
    rt.launch(f3)
    assert rt.fake.count("cuModuleGetFunction") == 5
    rt.mgpuSetDefaultDevice(0)
    rt.launch(f2)
    assert rt.fake.fake_function_device(rt.fake.fake_last_function()) == 0
    assert rt.fake.count("cuModuleGetFunction") == 5
    f3_again = rt.mgpuModuleGetFunction(m, b"k3")  # not yet on device 0: resolved there now
    assert f3_again == f3 and rt.fake.count("cuModuleGetFunction") == 6
    rt.launch(f3)
    assert rt.fake.fake_function_device(rt.fake.fake_last_function()) == 0
    assert rt.fake.count("cuModuleGetFunction") == 6
    g = rt.mgpuModuleGetFunction(m, b"k1")  # resolved on both devices before
    assert g == f1 and rt.fake.count("cuModuleGetFunction") == 6
    assert rt.fake.count("cuModuleLoadData") == 2 and rt.fake.count("cuLibraryLoadData") == 0
    rt.mgpuModuleUnload(m)
    assert rt.fake.count("cuModuleUnload") == 0  # cached



MANY = [f"k{i}" for i in range(16)]  # as many kernels as the fake driver holds per module


@pytest.mark.parametrize("llvm", [19, 22])
def test_first_call_of_a_many_kernel_module_resolves_only_the_kernel_it_launches(make_runtime,
                                                                                 llvm):
    """Issue 21 item 5: the first call of a module of many kernels makes exactly the stock
    wrapper's module calls (one cuModuleLoadData, one cuModuleGetFunction of the kernel it
    launches), and none of the driver's library API (whose load and first kernel cost ~2x the
    module API's on the H100); no kernel is enumerated, named or resolved at load."""
    calls = {}
    for mode in ("cached", "stock"):
        rt = make_runtime(env={"MGPU_CACHED_DISABLE": "1"} if mode == "stock" else {})
        buf = blob_buffer(ptx(*MANY))
        m = rt.mgpuModuleLoad(buf, 0)  # LLVM 22: in a global constructor; LLVM 19: per launch
        f = rt.mgpuModuleGetFunction(m, b"k7")
        s = rt.mgpuStreamCreate()
        rt.launch(f, stream=s)
        rt.mgpuStreamSynchronize(s)
        if llvm == 19:
            rt.mgpuModuleUnload(m)
        calls[mode] = rt.fake.log()
    cached = calls["cached"]
    assert not [c for c in cached if c.startswith(("cuLibrary", "cuKernel"))]
    assert "cuModuleUnload" not in cached  # kept for the next load (LLVM 19: every launch)
    # the module's driver calls: the load, then the look-up of the one kernel, as stock's
    modcalls = [c for c in cached if c.startswith("cuModule")]
    assert modcalls == ["cuModuleLoadData", "cuModuleGetFunction"]
    stock = calls["stock"]
    stock_modcalls = [c for c in stock if c.startswith("cuModule")]
    assert stock_modcalls == (modcalls + ["cuModuleUnload"] if llvm == 19 else modcalls)


def test_smem_limit_set_only_when_it_grows(rt):
    buf = blob_buffer(ptx("k"))
    f = rt.mgpuModuleGetFunction(rt.mgpuModuleLoad(buf, 0), b"k")
    for smem in [0, 1024, 1024, 512, 4096, 4096, 0, 2048]:
        rt.launch(f, smem=smem)
    assert rt.fake.count("cuFuncSetAttribute") == 2
    assert rt.fake.count("cuDeviceGetAttribute") == 1  # the device limit is queried once
    assert rt.fake.fake_function_smem_limit(rt.fake.fake_last_function()) == 4096
    assert rt.fake.fake_last_launch(6) == 2048


def test_context_is_restored_after_every_call(rt):
    fake = rt.fake
    buf = blob_buffer(ptx("k"))
    calls = [
        lambda: rt.mgpuModuleLoad(buf, 0),
        lambda: rt.mgpuModuleGetFunction(rt.mgpuModuleLoad(buf, 0), b"k"),
        lambda: rt.launch(rt.mgpuModuleGetFunction(rt.mgpuModuleLoad(buf, 0), b"k")),
        lambda: rt.mgpuStreamDestroy(rt.mgpuStreamCreate()),
        lambda: rt.mgpuEventDestroy(rt.mgpuEventCreate()),
        lambda: rt.mgpuMemFree(rt.mgpuMemAlloc(64, None, False), None),
        lambda: rt.mgpuMemFree(rt.mgpuMemAlloc(64, None, True), None),
        lambda: rt.mgpuStreamSynchronize(None),
    ]
    for ctx in [None, 0x1234]:  # no context current; some other context of the caller's
        fake.fake_set_current_context(ctx)
        for call in calls:
            call()
            assert fake.fake_current_context() == ctx
    fake.fake_set_current_context(None)


def test_unload_releases_and_exit_unload_makes_no_driver_call(rt):
    buf = blob_buffer(ptx("k"))
    m = rt.mgpuModuleLoad(buf, 0)
    rt.mgpuModuleUnload(m)  # LLVM 22: a global destructor at exit
    assert rt.fake.count("cuModuleUnload") == 0
    assert rt.mgpuModuleLoad(buf, 0) == m


def test_cluster_and_cooperative_launch(rt):
    f = rt.mgpuModuleGetFunction(rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0), b"k")
    rt.mgpuLaunchClusterKernel(f, 2, 1, 1, 8, 1, 1, 128, 1, 1, 0, None, None, None, 0)
    last = [rt.fake.fake_last_launch(i) for i in range(12)]
    assert last[:8] == [8, 1, 1, 128, 1, 1, 0, 2]
    assert (last[8], last[9], last[10]) == (4, 2, 5)  # cluster dimension x=2, then the policy
    rt.mgpuLaunchKernelCooperative(f, 4, 1, 1, 0, 0, 0, 64, 1, 1, 0, None, None, None)
    last = [rt.fake.fake_last_launch(i) for i in range(10)]
    assert last[7] == 1 and (last[8], last[9]) == (2, 1)  # only COOPERATIVE=1
    assert rt.fake.count("cuLaunchKernelEx") == 2


def _elf_header_pointing_far_away() -> bytes:
    """A 64-bit ELF header whose section header table is said to start 1 GiB away: reading it
    would fault (the real driver's loads may accept such bytes without reading them: lazy)."""
    import struct
    ehdr = bytearray(64)
    ehdr[0:4] = b"\x7fELF"
    ehdr[4], ehdr[5], ehdr[6] = 2, 1, 1
    struct.pack_into("<HHIQQQIHHHHHH", ehdr, 16, 2, 190, 1, 0, 0, 1 << 30, 0, 64, 0, 0, 64, 3, 0)
    return bytes(ehdr)


@pytest.mark.parametrize("fmt", ["elf", "fatbin"])
def test_header_pointing_past_mapped_memory_is_rejected_unread(rt, capfd, fmt):
    import struct
    if fmt == "elf":
        data = _elf_header_pointing_far_away()
    else:  # a fatbin header claiming a 1 GiB payload
        data = struct.pack("<IHHQ", 0xBA55ED50, 1, 16, 1 << 30)
    buf = blob_buffer(data)
    assert rt.mgpuModuleLoad(buf, 0) is None
    assert "'mgpuModuleLoad' failed with 'MGPU_CACHED_INVALID_IMAGE'" in capfd.readouterr().err
    assert rt.fake.count("cuModuleLoadData") == 0  # never handed to the driver
    assert rt.stats()["verify_bytes"] == 0
    # a valid blob at the same address afterwards loads and is cached as usual
    good = ptx("k")
    buf2 = blob_buffer(good, 4096)
    m = rt.mgpuModuleLoad(buf2, 0)
    assert m and rt.mgpuModuleLoad(buf2, 0) == m


def test_unreferenced_modules_beyond_the_limit_are_unloaded_oldest_first(make_runtime):
    rt = make_runtime(env={"MGPU_CACHED_MODULE_CACHE": "2"})
    bufs = {n: blob_buffer(ptx(n)) for n in "abcd"}
    mods = {}
    for n in "ab":
        mods[n] = rt.mgpuModuleLoad(bufs[n], 0)
        rt.mgpuModuleUnload(mods[n])          # unreferenced, kept: [a, b]
    assert rt.mgpuModuleLoad(bufs["a"], 0) == mods["a"]  # a hit takes a off the list: [b]
    for n in "cd":
        mods[n] = rt.mgpuModuleLoad(bufs[n], 0)
        rt.mgpuModuleUnload(mods[n])          # [b, c], then [b, c, d]: b goes
    assert rt.fake.count("cuModuleUnload") == 1
    assert rt.stats()["module_evictions"] == 1
    assert rt.mgpuModuleGetFunction(mods["a"], b"a")  # still referenced: still loaded
    loads = rt.fake.count("cuModuleLoadData")
    assert rt.mgpuModuleLoad(bufs["d"], 0) == mods["d"]  # kept: a hit
    assert rt.fake.count("cuModuleLoadData") == loads
    assert rt.mgpuModuleLoad(bufs["b"], 0) != mods["b"]  # unloaded: loaded again
    assert rt.fake.count("cuModuleLoadData") == loads + 1


def test_module_cache_zero_unloads_at_the_last_unload(make_runtime):
    rt = make_runtime(env={"MGPU_CACHED_MODULE_CACHE": "0"})
    buf = blob_buffer(ptx("k"))
    for _ in range(3):
        rt.mgpuModuleUnload(rt.mgpuModuleLoad(buf, 0))
    assert rt.fake.count("cuModuleLoadData") == 3 and rt.fake.count("cuModuleUnload") == 3
    assert rt.stats()["errors"] == 0


def test_default_keeps_a_module_loaded_per_launch_cached(rt):
    buf = blob_buffer(ptx("k"))
    for _ in range(300):  # LLVM <= 20 code: load, get, launch, unload per launch
        m = rt.mgpuModuleLoad(buf, 0)
        rt.launch(rt.mgpuModuleGetFunction(m, b"k"))
        rt.mgpuModuleUnload(m)
    assert rt.fake.count("cuModuleLoadData") == 1 and rt.fake.count("cuModuleUnload") == 0


def test_a_kernel_the_driver_cannot_load_fails_its_lookup_as_stock(rt, capfd):
    """The first look-up of a kernel loads it on the thread's device: when the driver refuses
    (here out of memory), mgpuModuleGetFunction fails, as stock's cuModuleGetFunction does, and
    nothing is kept: the next look-up asks again and succeeds."""
    m = rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0)
    rt.fake.fake_fail(b"cuModuleGetFunction", 2, 0)  # CUDA_ERROR_OUT_OF_MEMORY, next call
    assert rt.mgpuModuleGetFunction(m, b"k") is None
    assert "'cuModuleGetFunction' failed with 'CUDA_ERROR_OUT_OF_MEMORY'" in capfd.readouterr().err
    f = rt.mgpuModuleGetFunction(m, b"k")
    assert f and rt.fake.count("cuModuleGetFunction") == 2
    rt.launch(f)
    assert rt.fake.count("cuModuleGetFunction") == 2 and rt.fake.count("cuLaunchKernel") == 1
