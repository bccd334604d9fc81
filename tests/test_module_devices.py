# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The module cache on the driver's module API (issue 21 item 5): a blob is loaded with
cuModuleLoadData in the primary context of the device that loads it (the stock wrapper's one
call), its kernels found with cuModuleGetFunction; a module used on another device is loaded
there at its first need, and every per-device module is unloaded at retirement, in its own
device's context. No call of the driver's library API (cuLibrary*, cuKernel*) is ever made."""

import ctypes

import pytest

from conftest import blob_buffer, overwrite, ptx
from test_module_state import ENV, counter_ptx, get_global

LIBRARY_API = ("cuLibraryLoadData", "cuLibraryUnload", "cuLibraryGetKernel", "cuKernelGetFunction")


def no_library_calls(rt):
    return not [c for c in rt.fake.log() if c.startswith(("cuLibrary", "cuKernel"))]


@pytest.mark.parametrize("mode", ["cached", "stock"])
def test_one_device_first_call_makes_the_stock_calls(make_runtime, mode):
    """Load, get, launch on one device: one cuModuleLoadData, one cuModuleGetFunction, no
    library call, in both modes."""
    rt = make_runtime(disable=mode == "stock")
    m = rt.mgpuModuleLoad(blob_buffer(ptx("k", "j")), 0)
    f = rt.mgpuModuleGetFunction(m, b"k")
    rt.launch(f)
    c = rt.fake.counts("cuModuleLoadData", "cuModuleGetFunction", *LIBRARY_API)
    assert c == {"cuModuleLoadData": 1, "cuModuleGetFunction": 1,
                 **{k: 0 for k in LIBRARY_API}}
    assert no_library_calls(rt)
    # the module was loaded in device 0's primary context (the function belongs to it)
    assert rt.fake.fake_function_device(rt.fake.fake_last_function()) == 0


def test_module_used_on_two_devices_is_loaded_and_unloaded_once_on_each(make_runtime):
    rt = make_runtime(devices=2, env={"MGPU_CACHED_MODULE_CACHE": "0"})
    buf = blob_buffer(ptx("k"))
    m = rt.mgpuModuleLoad(buf, 0)
    f = rt.mgpuModuleGetFunction(m, b"k")
    rt.launch(f)
    assert rt.fake.count("cuModuleLoadData") == 1  # device 1 not used yet: nothing there
    rt.mgpuSetDefaultDevice(1)
    for _ in range(3):
        rt.launch(f)
    assert rt.fake.fake_function_device(rt.fake.fake_last_function()) == 1
    assert rt.fake.count("cuModuleLoadData") == 2  # once on device 1, at its first launch there
    assert rt.mgpuModuleLoad(buf, 0) == m  # a second reference (a hit): no driver call
    rt.mgpuModuleUnload(m)
    assert rt.fake.count("cuModuleUnload") == 0  # still referenced
    rt.mgpuModuleUnload(m)  # the last release (no module kept: MGPU_CACHED_MODULE_CACHE=0)
    assert rt.fake.count("cuModuleUnload") == 2  # both modules
    assert rt.fake.fake_module_unloads_elsewhere() == 0  # each in its own device's context
    s = rt.stats()
    assert (s["driver_module_loads"], s["driver_module_unloads"]) == (2, 2)
    assert no_library_calls(rt) and s["errors"] == 0


def test_eviction_unloads_every_device_module_in_its_context(make_runtime):
    """A cached module evicted while another thread's device is current: its modules are unloaded
    from their own contexts, not the caller's."""
    rt = make_runtime(devices=2, env={"MGPU_CACHED_MODULE_CACHE": "1"})
    a, b = blob_buffer(ptx("a")), blob_buffer(ptx("b"))
    ma = rt.mgpuModuleLoad(a, 0)
    fa = rt.mgpuModuleGetFunction(ma, b"a")
    rt.launch(fa)
    rt.mgpuSetDefaultDevice(1)
    rt.launch(fa)
    rt.mgpuModuleUnload(ma)  # kept (one unreferenced module allowed)
    rt.mgpuModuleUnload(rt.mgpuModuleLoad(b, 0))  # on device 1: evicts a
    assert rt.stats()["module_evictions"] == 1
    assert rt.fake.count("cuModuleUnload") == 2
    assert rt.fake.fake_module_unloads_elsewhere() == 0


@pytest.mark.parametrize("size", [16 << 10, 512 << 10], ids=["small", "large"])
def test_the_copy_for_other_devices_is_the_loaded_image(make_runtime, size):
    """With two devices a heap blob is copied for loads elsewhere: a large image by the state
    scan's helper beside the driver load, a small one in the caller. The caller's bytes then
    change (a JIT engine reusing the memory); device 1's load still gets the image device 0
    loaded."""
    from test_module_hit_check import blob_text
    rt = make_runtime(devices=2)
    buf = blob_buffer(blob_text("k_first", size))
    m = rt.mgpuModuleLoad(buf, 0)
    f = rt.mgpuModuleGetFunction(m, b"k_first")
    rt.launch(f)
    overwrite(buf, blob_text("k_other", size))
    rt.mgpuSetDefaultDevice(1)
    rt.launch(f)
    assert rt.fake.fake_function_device(rt.fake.fake_last_function()) == 1
    assert rt.fake.count("cuModuleLoadData") == 2 and rt.stats()["errors"] == 0


def test_get_global_is_the_threads_device_module(make_runtime):
    """mgpuModuleGetGlobal: cuModuleGetGlobal on the module of the calling thread's device (loaded
    there first if needed): each device's module has its own variable."""
    rt = make_runtime(devices=2, env=ENV)
    buf = blob_buffer(counter_ptx(5))
    m = rt.mgpuModuleLoad(buf, len(buf))
    p0, n0 = get_global(rt, m, b"counter")
    rt.mgpuSetDefaultDevice(1)
    p1, n1 = get_global(rt, m, b"counter")
    assert p0 and p1 and p0 != p1 and n0 == n1 == 4
    assert ctypes.c_uint32.from_address(p1).value == 5  # device 1's module starts fresh
    assert rt.fake.count("cuModuleLoadData") == 2 and rt.fake.fake_global_gets() == 2
    rt.mgpuModuleUnload(m)  # state: never cached, the last release unloads both
    assert rt.fake.count("cuModuleUnload") == 2
    assert rt.fake.fake_module_unloads_elsewhere() == 0 and no_library_calls(rt)


def test_reset_forgets_a_held_modules_dead_context(make_runtime):
    """A module held across a reset of device 0's primary context: a kernel asked for afterwards
    is found in a module loaded in the new context, and the release never touches the module of
    the dead one (no call on a dead object)."""
    rt = make_runtime(env={"MGPU_CACHED_MODULE_CACHE": "0"})
    rt.fake.cuDevicePrimaryCtxReset_v2.argtypes = [ctypes.c_int]
    buf = blob_buffer(ptx("k", "j"))
    m = rt.mgpuModuleLoad(buf, 0)
    rt.launch(rt.mgpuModuleGetFunction(m, b"k"))
    assert rt.fake.cuDevicePrimaryCtxReset_v2(0) == 0
    rt.mgpuStreamDestroy(rt.mgpuStreamCreate())  # a create-type call finds the reset: recovered
    assert rt.stats()["context_recoveries"] == 1
    f = rt.mgpuModuleGetFunction(m, b"j")
    assert f and rt.fake.count("cuModuleLoadData") == 2  # again, in the new context
    rt.launch(f)
    rt.mgpuModuleUnload(m)
    assert rt.fake.count("cuModuleUnload") == 1  # the new context's module only
    assert rt.fake.fake_dead_uses() == 0


def _large_fatbin() -> bytes:
    """The 301-kernel module's 0.94 MB fatbin (a cubin and a zstd-compressed PTX entry)."""
    import sys
    from conftest import ROOT
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import run as bench_run
    return bench_run.extract_blob((ROOT / "tests/data/mlir/large_module_llvm22.o").read_bytes())


def test_large_module_loaded_in_a_constructor_of_a_dlopened_library(tmp_path, fake_driver_build):
    """The module-state scan of a large image runs on a helper thread beside the driver load
    (blob_state.h); here the load happens in a global constructor of a library being dlopened,
    with the dynamic loader's lock held: the helper must not need it (the decompressor is loaded
    by the caller first), or this hangs."""
    import os
    import subprocess
    import mgpu_cached
    from conftest import CC, DATA, compile_shared
    from test_module_state import have_zstd
    if CC is None:
        pytest.skip("no C compiler")
    blob = _large_fatbin()
    assert len(blob) >= 256 << 10  # scanned on the helper thread
    path = tmp_path / "large.fatbin"
    path.write_bytes(blob)
    src = DATA / "modcache" / "ctor_load.c"
    lib = compile_shared(src, tmp_path / "libctor_load.so",
                         ["-DCTOR_LIB", *mgpu_cached.ldflags_list()])
    exe = tmp_path / "ctor_load"
    subprocess.run([CC, "-std=c11", "-D_GNU_SOURCE", "-o", str(exe), str(src), "-ldl"],
                   check=True)
    stats = tmp_path / "stats.json"
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake_driver_build), CTOR_BLOB=str(path),
               CTOR_KERNEL="empty", MGPU_CACHED_STATS_FILE=str(stats))
    env.pop("MGPU_CACHED_DISABLE", None)
    p = subprocess.run([str(exe), str(lib)], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "ok" and p.stderr == "", p.stdout + p.stderr
    import json
    s = json.loads(stats.read_text())["stats"]
    assert s["driver_module_loads"] == 1 and s["errors"] == 0
    # the image was classified (stateless where the decompressor is there; else stateful)
    assert s["module_stateful_loads"] == (0 if have_zstd() else 1)


@pytest.mark.parametrize("stateful", [False, True])
def test_large_images_are_classified_as_small_ones(make_runtime, stateful):
    """Images of 256 KiB and more are scanned beside the driver load: the same verdicts (a module
    with state: a driver load per load, fresh state; without: cached)."""
    from conftest import ptx
    rt = make_runtime(env=ENV)
    pad = ".global .align 4 .u32 counter;\n" if stateful else ""
    text = ptx("count_up", pad=pad)[:-1] + b"//" + b"x" * (300 << 10) + b"\n\0"
    buf = blob_buffer(text)
    mods = {rt.mgpuModuleLoad(buf, 0) for _ in range(3)}
    s = rt.stats()
    if stateful:
        assert len(mods) == 3 and rt.fake.count("cuModuleLoadData") == 3
        assert s["module_stateful_loads"] == 3
    else:
        assert len(mods) == 1 and rt.fake.count("cuModuleLoadData") == 1
        assert s["module_stateful_loads"] == 0 and s["module_hits"] == 2


@pytest.mark.parametrize("sanitizer", ["thread", "address"])
def test_large_loads_from_threads_under_sanitizers(tmp_path, sanitizer):
    """Threads load a large image again and again (no module kept: every load a driver load and a
    scan on a helper thread): the sanitizer sees no data race, bad read or leak of the helper's
    work."""
    import os
    import subprocess
    from conftest import DRIVERS, compile_shared
    from test_module_lifetime import build_with_sources
    flag = f"-fsanitize={sanitizer}"
    exe = build_with_sources(tmp_path, "large_loads", [flag])
    probe = subprocess.run([str(exe)], capture_output=True, text=True)
    if "Sanitizer" in probe.stderr:
        pytest.skip(f"{sanitizer} sanitizer programs do not run here: {probe.stderr[:200]}")
    blob = tmp_path / "large.fatbin"
    blob.write_bytes(_large_fatbin())
    fake = compile_shared(DRIVERS / "fakecuda.c", tmp_path / "libfake_san.so", [flag])
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake), MGPU_CACHED_MODULE_CACHE="0",
               TSAN_OPTIONS="halt_on_error=0 exitcode=66", ASAN_OPTIONS="detect_leaks=0")
    env.pop("MGPU_CACHED_DISABLE", None)
    p = subprocess.run([str(exe), str(blob), "3", "4", "empty"], env=env, capture_output=True,
                       text=True, timeout=600)
    assert "Sanitizer" not in p.stderr, p.stderr[-4000:]
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stdout + p.stderr[-2000:]
