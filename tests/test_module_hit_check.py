# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The hit check that does not grow with the blob (issue 12, item 3): a blob in a read-only segment of
a loaded object is not compared on a hit while no object was unloaded since its last check (a
dlopen changes nothing there); every other blob is compared as before. Such a blob is not even
copied (issue 21 item 5) where there is one device: a hit after a dlclose cannot compare it and
loads it again; with more devices the copy is kept (for loads on the others) and compared. The
blobs here live in the .rodata of small shared libraries built by the test."""

import ctypes
import os

import pytest

from conftest import CC, blob_buffer, compile_shared, overwrite, ptx

vp = ctypes.c_void_p
RTLD_NOW, RTLD_LOCAL, RTLD_NOLOAD = 0x2, 0x0, 0x4
BLOB_BYTES = 16 * 1024


def blob_text(kernel: str, size: int = BLOB_BYTES) -> bytes:
    """A PTX blob of `size` bytes (NUL included) whose only kernel is `kernel`."""
    head = ptx(kernel)[:-1]
    return head + b"//" + b"x" * (size - len(head) - 4) + b"\n\0"


def c_array(data: bytes) -> str:
    return ",".join(str(b) for b in data)


def blob_library(tmp_path, name: str, kernel: str, writable: bool = False,
                 size: int = BLOB_BYTES):
    """A shared library holding blob_text(kernel) as `mc_test_blob` (const: in .rodata, a
    read-only segment; writable: in .data). Libraries made with kernels of the same name length
    have the same layout."""
    if CC is None:
        pytest.skip("no C compiler")
    src = tmp_path / f"{name}.c"
    qual = "" if writable else "const "
    src.write_text(f"{qual}unsigned char mc_test_blob[{size}] "
                   f"__attribute__((aligned(64))) = {{{c_array(blob_text(kernel, size))}}};\n")
    return compile_shared(src, tmp_path / f"lib{name}.so")


class Dl:
    """dlopen/dlsym/dlclose of the C library (ctypes.CDLL never unloads)."""

    def __init__(self):
        self.libc = ctypes.CDLL(None)
        for n, res, args in [("dlopen", vp, [ctypes.c_char_p, ctypes.c_int]),
                             ("dlsym", vp, [vp, ctypes.c_char_p]),
                             ("dlclose", ctypes.c_int, [vp])]:
            f = getattr(self.libc, n)
            f.restype, f.argtypes = res, args

    def open(self, path, flags=RTLD_NOW | RTLD_LOCAL):
        h = self.libc.dlopen(str(path).encode(), flags)
        assert h, f"dlopen {path} failed"
        return h

    def blob(self, handle) -> int:
        a = self.libc.dlsym(handle, b"mc_test_blob")
        assert a
        return a

    def close(self, handle, path) -> None:
        assert self.libc.dlclose(handle) == 0
        assert not self.libc.dlopen(str(path).encode(), RTLD_NOW | RTLD_NOLOAD), "not unloaded"


def mapping_perms(addr: int) -> str:
    """The permissions of the mapping holding addr (/proc/self/maps), e.g. 'r--p'."""
    with open("/proc/self/maps") as f:
        for line in f:
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            if lo <= addr < hi:
                return line.split()[1]
    raise AssertionError(f"{addr:#x} is not mapped")


def counters(rt):
    s = rt.stats()
    return s["verify_bytes"], s["verify_skips"], s["module_hits"]


def test_blob_in_a_shared_library_rodata_hits_without_comparing(rt, tmp_path):
    dl = Dl()
    path = blob_library(tmp_path, "ro", "k_rodata")
    h = dl.open(path)
    addr = dl.blob(h)
    assert mapping_perms(addr)[:2] == "r-"  # the premise: a read-only mapping of the library
    m = rt.mgpuModuleLoad(addr, 0)
    assert m and rt.mgpuModuleGetFunction(m, b"k_rodata")
    rt.mgpuModuleUnload(m)
    for _ in range(100):  # LLVM <= 20 code: load and unload around every launch
        assert rt.mgpuModuleLoad(addr, 0) == m
        rt.mgpuModuleUnload(m)
    assert counters(rt) == (0, 100, 100)  # not one byte compared
    assert rt.fake.count("cuModuleLoadData") == 1
    # a library can be unloaded (unlike the executable): every hit asked for the generation
    assert rt.stats()["verify_skips_executable"] == 0


def test_small_blobs_are_compared_even_in_rodata(rt, tmp_path):
    """Below 2 KiB comparing costs no more than asking the loader: compared on every hit."""
    dl = Dl()
    for size, compared in [(2047, True), (2048, False)]:
        addr = dl.blob(dl.open(blob_library(tmp_path, f"small{size}", "k_small", size=size)))
        before = counters(rt)
        m = rt.mgpuModuleLoad(addr, 0)
        for _ in range(3):
            assert rt.mgpuModuleLoad(addr, 0) == m
        after = counters(rt)
        assert (after[0] - before[0], after[1] - before[1]) == ((3 * size, 0) if compared
                                                                 else (0, 3))


def test_hit_check_full_compares_every_hit(make_runtime, tmp_path):
    rt = make_runtime(env={"MGPU_CACHED_HIT_CHECK": "full"})
    dl = Dl()
    addr = dl.blob(dl.open(blob_library(tmp_path, "ro_full", "k_rodata")))
    m = rt.mgpuModuleLoad(addr, 0)
    for _ in range(10):
        assert rt.mgpuModuleLoad(addr, 0) == m
    assert counters(rt) == (10 * BLOB_BYTES, 0, 10)


@pytest.mark.parametrize("where", ["heap", "writable-data"])
def test_blobs_in_writable_memory_are_compared_on_every_hit(rt, tmp_path, where):
    """Heap blobs and blobs in an object's writable data (JIT engines) keep the full comparison,
    and a change there is caught."""
    if where == "heap":
        buf = blob_buffer(blob_text("k_first"))
        addr = ctypes.addressof(buf)
    else:
        dl = Dl()
        addr = dl.blob(dl.open(blob_library(tmp_path, "rw", "k_first", writable=True)))
        assert mapping_perms(addr)[:2] == "rw"
    m = rt.mgpuModuleLoad(addr, 0)
    for _ in range(10):
        assert rt.mgpuModuleLoad(addr, 0) == m
    assert counters(rt) == (10 * BLOB_BYTES, 0, 10)
    ctypes.memmove(addr, blob_text("k_other"), BLOB_BYTES)  # same address, different blob
    m2 = rt.mgpuModuleLoad(addr, 0)
    assert m2 != m and rt.mgpuModuleGetFunction(m2, b"k_other")
    assert rt.fake.count("cuModuleLoadData") == 2 and rt.stats()["module_stale"] == 1


def test_dlclose_then_dlopen_of_a_different_blob_at_the_same_address_is_caught(rt, tmp_path):
    """Two libraries of identical layout whose blobs differ (kernel k_aaaa vs k_bbbb), loaded one
    after the other: the loader maps the second where the first was, and the cached module of the
    first must not be returned for it."""
    dl = Dl()
    pa = blob_library(tmp_path, "blob_a", "k_aaaa")
    pb = blob_library(tmp_path, "blob_b", "k_bbbb")
    assert os.path.getsize(pa) == os.path.getsize(pb)
    ha = dl.open(pa)
    addr_a = dl.blob(ha)
    m1 = rt.mgpuModuleLoad(addr_a, 0)
    rt.mgpuModuleUnload(m1)
    assert rt.mgpuModuleLoad(addr_a, 0) == m1  # a hit, not compared
    rt.mgpuModuleUnload(m1)
    assert counters(rt) == (0, 1, 1)
    dl.close(ha, pa)
    hb = dl.open(pb)
    addr_b = dl.blob(hb)
    if addr_b != addr_a:
        dl.close(hb, pb)
        pytest.skip(f"the loader did not reuse the address ({addr_a:#x}, then {addr_b:#x})")
    m2 = rt.mgpuModuleLoad(addr_b, 0)
    assert m2 and m2 != m1
    assert rt.mgpuModuleGetFunction(m2, b"k_bbbb")
    assert rt.mgpuModuleGetFunction(m2, b"k_aaaa") is None  # really the new blob's module
    rt.launch(rt.mgpuModuleGetFunction(m2, b"k_bbbb"))
    s = rt.stats()
    assert rt.fake.count("cuModuleLoadData") == 2 and s["module_stale"] == 1
    assert (s["verify_skips"], s["module_hits"]) == (1, 1)
    # the new module is checked and cached in its turn: its hits are not compared again
    before = counters(rt)
    for _ in range(5):
        assert rt.mgpuModuleLoad(addr_b, 0) == m2
    assert counters(rt) == (before[0], before[1] + 5, before[2] + 5)
    assert rt.fake.count("cuModuleLoadData") == 2
    dl.close(hb, pb)


@pytest.mark.parametrize("devices", [1, 2])
def test_unrelated_dlopen_keeps_skipping_and_dlclose_makes_the_next_hit_check(make_runtime,
                                                                             tmp_path, devices):
    """A dlopen cannot change a loaded object's bytes: hits go on skipping. After a dlclose the
    next hit checks: with one device no copy was kept, so the blob is loaded again (a new module,
    not compared); with two the copy is compared (equal: the same module). Then hits skip again."""
    rt = make_runtime(devices=devices)
    dl = Dl()
    addr = dl.blob(dl.open(blob_library(tmp_path, f"ro_main{devices}", "k_main")))
    other_path = blob_library(tmp_path, f"unrelated{devices}", "k_unrelated")
    m = rt.mgpuModuleLoad(addr, 0)
    assert rt.mgpuModuleLoad(addr, 0) == m
    assert counters(rt) == (0, 1, 1)
    other = dl.open(other_path)  # an object loaded: nothing to check
    assert rt.mgpuModuleLoad(addr, 0) == m
    assert rt.mgpuModuleLoad(addr, 0) == m
    assert counters(rt) == (0, 3, 3)
    dl.close(other, other_path)  # an object unloaded: the next hit checks
    m2 = rt.mgpuModuleLoad(addr, 0)
    if devices == 1:
        assert m2 != m and counters(rt) == (0, 3, 3)  # no copy to compare: loaded again
        assert rt.fake.count("cuModuleLoadData") == 2 and rt.stats()["module_stale"] == 1
        assert rt.mgpuModuleGetFunction(m2, b"k_main")
    else:
        assert m2 == m and counters(rt) == (BLOB_BYTES, 3, 4)
        assert rt.fake.count("cuModuleLoadData") == 1
    assert rt.mgpuModuleLoad(addr, 0) == m2
    s = counters(rt)
    assert rt.mgpuModuleLoad(addr, 0) == m2
    assert counters(rt) == (s[0], s[1] + 1, s[2] + 1)  # skipping again


def test_rewriting_a_read_only_segment_is_assumed_away_unless_hit_check_full(make_runtime,
                                                                              tmp_path):
    """The documented assumption: a program does not make a loaded object's read-only segment
    writable again and rewrite a blob there. One that does needs MGPU_CACHED_HIT_CHECK=full, which
    compares every hit and catches it; by default the rewrite goes unseen until the next dlopen or
    dlclose."""
    import mmap
    libc = ctypes.CDLL(None)
    libc.mprotect.argtypes = [vp, ctypes.c_size_t, ctypes.c_int]
    dl = Dl()
    for mode, caught in [("full", True), ("auto", False)]:
        rt = make_runtime(env={"MGPU_CACHED_HIT_CHECK": mode})
        addr = dl.blob(dl.open(blob_library(tmp_path, f"rewrite_{mode}", "k_before")))
        m = rt.mgpuModuleLoad(addr, 0)
        assert rt.mgpuModuleLoad(addr, 0) == m
        page = addr & ~(mmap.PAGESIZE - 1)
        span = addr + BLOB_BYTES - page
        assert libc.mprotect(page, span, 3) == 0  # PROT_READ | PROT_WRITE
        overwrite((ctypes.c_char * BLOB_BYTES).from_address(addr), blob_text("k_after_"))
        assert libc.mprotect(page, span, 1) == 0
        m2 = rt.mgpuModuleLoad(addr, 0)
        assert (m2 != m) == caught, mode


@pytest.mark.parametrize("devices", [1, 2])
def test_address_that_became_writable_memory_after_dlclose_goes_back_to_comparing(make_runtime,
                                                                                  tmp_path,
                                                                                  devices):
    """The library is unloaded and writable memory is mapped where its blob was, holding the same
    bytes: the hit after the dlclose checks (two devices: compares the copy, equal; one device: no
    copy, so the blob is loaded again, and copied now that it lies in writable memory), finds the
    address outside every loaded object and compares every later hit, so a rewrite there without
    any dlopen or dlclose is still caught."""
    rt = make_runtime(devices=devices)
    import mmap
    libc = ctypes.CDLL(None)
    libc.mmap.restype = vp
    libc.mmap.argtypes = [vp, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                          ctypes.c_long]
    dl = Dl()
    path = blob_library(tmp_path, f"gone{devices}", "k_gone")
    h = dl.open(path)
    addr = dl.blob(h)
    m = rt.mgpuModuleLoad(addr, 0)
    assert rt.mgpuModuleLoad(addr, 0) == m
    assert counters(rt) == (0, 1, 1)
    dl.close(h, path)
    page = addr & ~(mmap.PAGESIZE - 1)
    span = (addr + BLOB_BYTES - page + mmap.PAGESIZE - 1) & ~(mmap.PAGESIZE - 1)
    MAP_PRIVATE_ANON_FIXED_NOREPLACE = 0x02 | 0x20 | 0x100000
    got = libc.mmap(page, span, 3, MAP_PRIVATE_ANON_FIXED_NOREPLACE, -1, 0)
    if got != page:
        pytest.skip(f"could not map writable memory at {page:#x} after the dlclose")
    try:
        ctypes.memmove(addr, blob_text("k_gone"), BLOB_BYTES)
        if devices == 2:
            assert rt.mgpuModuleLoad(addr, 0) == m  # compared: equal
            assert rt.mgpuModuleLoad(addr, 0) == m  # compared again: not in any object now
            assert counters(rt) == (2 * BLOB_BYTES, 1, 3)
        else:
            m = rt.mgpuModuleLoad(addr, 0)  # no copy to compare with: loaded again
            assert rt.mgpuModuleLoad(addr, 0) == m  # compared: not in any object now
            assert counters(rt) == (BLOB_BYTES, 1, 2)
            assert rt.fake.count("cuModuleLoadData") == 2
        stale = rt.stats()["module_stale"]
        ctypes.memmove(addr, blob_text("k_new_"), BLOB_BYTES)  # no dlopen, no dlclose
        m2 = rt.mgpuModuleLoad(addr, 0)
        assert m2 != m and rt.mgpuModuleGetFunction(m2, b"k_new_")
        assert rt.stats()["module_stale"] == stale + 1
    finally:
        libc.munmap.argtypes = [vp, ctypes.c_size_t]
        libc.munmap(page, span)


def test_llvm19_program_hits_on_its_blob_in_the_executable_without_comparing(tmp_path,
                                                                             fake_driver_build):
    """The program compiled by MLIR 19 loads its module around every launch; the blob is a
    constant in the executable's .rodata: after the first load, no hit compares it or asks the
    loader for its generation, since the executable is never unloaded (and with
    MGPU_CACHED_HIT_CHECK=full every hit compares)."""
    import json
    import subprocess
    from test_mlir_programs import build
    exe = build(tmp_path, "empty_loop", 19)
    got = {}
    for mode in ["auto", "full"]:
        stats = tmp_path / f"stats_{mode}.json"
        env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake_driver_build),
                   MGPU_CACHED_STATS_FILE=str(stats), MGPU_CACHED_HIT_CHECK=mode,
                   HARNESS_NO_CHECK="1")
        env.pop("MGPU_CACHED_DISABLE", None)
        p = subprocess.run([str(exe), "50"], env=env, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0 and p.stderr == "", p.stdout + p.stderr
        got[mode] = json.loads(stats.read_text())["stats"]
    auto, full = got["auto"], got["full"]
    assert (auto["module_loads"], auto["module_hits"], auto["driver_module_loads"]) == (50, 49, 1)
    assert (auto["verify_skips"], auto["verify_bytes"]) == (49, 0)
    # the executable is never unloaded: its hits read no generation (no loader lock)
    assert auto["verify_skips_executable"] == 49
    assert (full["module_hits"], full["verify_skips"]) == (49, 0) and full["verify_bytes"] > 0
    assert full["verify_skips_executable"] == 0
    assert full["verify_bytes"] % 49 == 0  # the whole blob, every hit


@pytest.mark.parametrize("sanitizer", ["thread", "address"])
def test_hits_racing_with_dlopen_and_dlclose(tmp_path, sanitizer):
    """Threads hit on a .rodata blob while another thread dlopens and dlcloses an unrelated
    library: every hit returns the first module, each is either compared or skipped, and the
    sanitizer sees no data race or bad read. Two devices, so that the blob's copy is kept (with
    one, a hit after a dlclose loads the blob again: test_unrelated_dlopen...)."""
    import json
    import subprocess
    from test_module_lifetime import build_with_sources
    from conftest import DRIVERS
    flag = f"-fsanitize={sanitizer}"
    exe = build_with_sources(tmp_path, "rodata_hits", [flag])
    blob = blob_library(tmp_path, "race_blob", "k_rodata")
    other = blob_library(tmp_path, "race_other", "k_other_")
    probe = subprocess.run([str(exe)], capture_output=True, text=True)
    if "Sanitizer" in probe.stderr:
        pytest.skip(f"{sanitizer} sanitizer programs do not run here: {probe.stderr[:200]}")
    fake = compile_shared(DRIVERS / "fakecuda.c", tmp_path / "libfake_san.so", [flag])
    stats = tmp_path / "stats.json"
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake), MGPU_CACHED_STATS_FILE=str(stats),
               TSAN_OPTIONS="halt_on_error=0 exitcode=66", ASAN_OPTIONS="detect_leaks=0",
               FAKECUDA_DEVICES="2")
    env.pop("MGPU_CACHED_DISABLE", None)
    p = subprocess.run([str(exe), str(blob), str(other), "3", "3000"], env=env,
                       capture_output=True, text=True, timeout=600)
    assert "Sanitizer" not in p.stderr, p.stderr[-4000:]
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stdout + p.stderr[-2000:]
    s = json.loads(stats.read_text())["stats"]
    assert s["module_hits"] == 3 * 3000 + 2 and s["driver_module_loads"] == 1
    assert s["errors"] == 0 and s["verify_bytes"] % BLOB_BYTES == 0
    compared = s["verify_bytes"] // BLOB_BYTES
    assert compared + s["verify_skips"] == s["module_hits"]  # every hit one or the other
    assert compared >= 1 and s["verify_skips"] >= 1  # at least the last two hits, one of each


def test_fork_while_another_thread_hits(tmp_path, fake_driver_build):
    """A hit reads the loader's generation through dl_iterate_phdr, which holds the loader's list
    lock; glibc's fork does not reset that lock in the child, so a fork at that moment would leave
    the child hanging in its first dl_iterate_phdr, dlopen or dlclose (about every other fork,
    before the library's fork handlers waited for such calls to finish). Every child here walks
    the objects, dlopens and loads a module, and exits."""
    import subprocess
    from test_module_lifetime import build_with_sources
    exe = build_with_sources(tmp_path, "rodata_fork")
    blob = blob_library(tmp_path, "fork_blob", "k_rodata")
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake_driver_build))
    env.pop("MGPU_CACHED_DISABLE", None)
    p = subprocess.run([str(exe), str(blob), "400", "2"], env=env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stdout + p.stderr[-2000:]


def test_a_heap_blob_changed_in_any_page_is_caught(rt):
    """A heap blob over four pages (it begins 100 bytes into one; the comparison runs page by
    page): one byte changed on either side of each page boundary, or in its last comment byte, is
    caught at the next load, which loads the blob again; the same bytes put back are caught too."""
    import mmap

    pg = mmap.PAGESIZE
    size = 3 * pg + 200
    mm = mmap.mmap(-1, 5 * pg)
    base = ctypes.addressof(ctypes.c_char.from_buffer(mm))
    addr = base + 100
    text = blob_text("k_pages", size)
    ctypes.memmove(addr, text, size)
    m = rt.mgpuModuleLoad(addr, 0)
    assert rt.mgpuModuleLoad(addr, 0) == m  # a hit: compared, the same
    first_page_end = pg - 100  # the blob's first byte on its second page
    spots = [len(ptx("k_pages")) + 2, first_page_end - 1, first_page_end,
             first_page_end + pg - 1, first_page_end + pg, first_page_end + 2 * pg, size - 3]
    loads = rt.fake.count("cuModuleLoadData")
    for i in spots:
        assert text[i:i + 1] == b"x"  # a byte of the comment: the blob stays valid PTX
        ctypes.memmove(addr + i, b"y", 1)
        m2 = rt.mgpuModuleLoad(addr, 0)
        assert m2 != m and rt.mgpuModuleGetFunction(m2, b"k_pages")
        ctypes.memmove(addr + i, b"x", 1)
        m = rt.mgpuModuleLoad(addr, 0)
        assert m != m2
        rt.mgpuModuleUnload(m2)
    assert rt.fake.count("cuModuleLoadData") == loads + 2 * len(spots)
    assert rt.stats()["module_stale"] == 2 * len(spots)
    del mm


# ---- the comparison itself (csrc/support/same_bytes.c) --------------------------------------------


def _same_bytes_lib(tmp_path, name, *defines):
    if CC is None:
        pytest.skip("no C compiler")
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    lib = tmp_path / f"lib{name}.so"
    subprocess.run([CC, "-std=c11", "-D_GNU_SOURCE", "-O2", "-fPIC", "-shared", *defines,
                    f"-I{root / 'csrc'}", "-o", str(lib),
                    str(root / "csrc" / "support" / "same_bytes.c")], check=True)
    dll = ctypes.CDLL(str(lib))
    dll.mc_same_bytes.restype = ctypes.c_int
    dll.mc_same_bytes.argtypes = [vp, vp, ctypes.c_size_t]
    dll.mc_same_bytes_kind.restype = ctypes.c_char_p
    dll.mc_copy_alloc_like.restype = vp
    dll.mc_copy_alloc_like.argtypes = [vp, ctypes.c_size_t]
    dll.mc_copy_free.argtypes = [vp]
    return dll


def _wide_here() -> bool:
    """Whether this CPU gets mc_same_bytes' 512-bit path, read from /proc/cpuinfo's flags (x86-64
    with AVX-512 and AVX-VNNI; the OS saving the registers is not checked here)."""
    import platform

    if platform.machine() != "x86_64":
        return False
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return {"avx512f", "avx_vnni"} <= set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return False


@pytest.mark.parametrize("build", ["wide", "memcmp"])
def test_same_bytes_finds_every_changed_byte_at_every_alignment(tmp_path, build):
    """mc_same_bytes, the hit comparison of a blob on the heap: built as the library is (512-bit
    loads where the CPU runs them at full clock, which this test checks against /proc/cpuinfo)
    and with memcmp only. For lengths around every width it handles (the unaligned first vector
    up to the blob's 64-byte boundary, 64-byte and 256-byte steps, the last 0-255 bytes as
    vectors that stop at the range's last 64), at every offset of either range within 64 bytes,
    equal ranges are equal, one byte changed anywhere in them is caught, and bytes just outside
    them are not read into the answer. Ranges that end at the end of a readable page before an
    unreadable one, or begin at one's start after one, are read without a fault (no load leaves
    the ranges)."""
    import mmap
    import random

    dll = _same_bytes_lib(tmp_path, build, *(["-DMC_SAME_BYTES_MEMCMP_ONLY"]
                                             if build == "memcmp" else []))
    assert dll.mc_same_bytes_kind() == (b"avx512" if build == "wide" and _wide_here()
                                        else b"memcmp")
    rng = random.Random(21)
    pg = mmap.PAGESIZE
    buf_a = ctypes.create_string_buffer(3 * pg)
    buf_b = ctypes.create_string_buffer(3 * pg)
    base_a = (ctypes.addressof(buf_a) + 64 + 63) & ~63
    base_b = (ctypes.addressof(buf_b) + 64 + 63) & ~63
    lengths = [0, 1, 2, 31, 63, 64, 65, 100, 127, 128, 129, 255, 256, 257, 319, 320, 513, 1000,
               3700]
    checks = 0
    for n in lengths:
        for oa, ob in [(0, 0), (1, 1), (17, 17), (63, 63), (0, 1), (5, 40), (63, 0), (32, 16)]:
            a, b = base_a + oa, base_b + ob
            data = bytes(rng.randrange(256) for _ in range(n))
            ctypes.memmove(a, data, n)
            ctypes.memmove(b, data, n)
            # the bytes around the ranges differ: never part of the answer
            for p, x in ((a - 1, b"\x01"), (b - 1, b"\x02"), (a + n, b"\x03"), (b + n, b"\x04")):
                ctypes.memmove(p, x, 1)
            assert dll.mc_same_bytes(a, b, n) == 1, (n, oa, ob)
            spots = set(range(min(n, 70))) | set(range(max(0, n - 70), n))
            spots |= {i for i in range(0, n, 64)} | {i - 1 for i in range(64, n, 64)}
            for i in sorted(spots):
                for side in (a, b):
                    old = ctypes.string_at(side + i, 1)
                    ctypes.memmove(side + i, bytes([old[0] ^ 0x80]), 1)
                    assert dll.mc_same_bytes(a, b, n) == 0, (n, oa, ob, i)
                    ctypes.memmove(side + i, old, 1)
                    checks += 1
            assert dll.mc_same_bytes(a, b, n) == 1
    assert checks > 5000
    # beside unreadable pages: a readable page between two PROT_NONE ones
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = vp
    libc.mmap.argtypes = [vp, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                          ctypes.c_long]
    libc.mprotect.argtypes = [vp, ctypes.c_size_t, ctypes.c_int]
    libc.munmap.argtypes = [vp, ctypes.c_size_t]
    PROT_NONE, PROT_RW, MAP_PRIVATE_ANON = 0, 3, 0x22
    area = libc.mmap(None, 3 * pg, PROT_RW, MAP_PRIVATE_ANON, -1, 0)
    assert area not in (None, ctypes.c_void_p(-1).value)
    try:
        page = area + pg
        assert libc.mprotect(area, pg, PROT_NONE) == 0
        assert libc.mprotect(page + pg, pg, PROT_NONE) == 0
        ctypes.memmove(page, bytes(range(256)) * (pg // 256), pg)
        for n in (1, 33, 64, 100, 300):
            end = page + pg - n  # ends at the unreadable page
            twin = base_a + 7
            ctypes.memmove(twin, end, n)
            assert dll.mc_same_bytes(twin, end, n) == 1
            assert dll.mc_same_bytes(end, twin, n) == 1
            ctypes.memmove(twin, page, n)  # begins after the unreadable page
            assert dll.mc_same_bytes(twin, page, n) == 1
            assert dll.mc_same_bytes(page, twin, n) == 1
    finally:
        libc.munmap(area, 3 * pg)


def test_copies_sit_at_their_blobs_offset_within_64_bytes(tmp_path):
    """mc_copy_alloc_like: the room for a blob's copy begins at the blob's own offset within 64
    bytes (so the comparison reads both aligned), holds the whole length, and is freed by
    mc_copy_free."""
    dll = _same_bytes_lib(tmp_path, "copy")
    buf = ctypes.create_string_buffer(8192)
    for off in (0, 1, 16, 36, 63, 64, 100):
        for n in (1, 63, 64, 3700):
            src = ctypes.addressof(buf) + off
            copy = dll.mc_copy_alloc_like(src, n)
            assert copy and copy % 64 == src % 64
            ctypes.memmove(copy, src, n)
            assert dll.mc_same_bytes(copy, src, n) == 1
            dll.mc_copy_free(copy)
    dll.mc_copy_free(None)


def test_verbose_names_the_comparison_a_heap_blob_gets(make_runtime, capfd):
    """MGPU_CACHED_VERBOSE=1: a blob copied for its hits is announced with the comparison they
    use here (512-bit loads where the CPU keeps its clock with them, else memcmp); a hit on it
    compares and finds it the same."""
    rt = make_runtime(env={"MGPU_CACHED_VERBOSE": "1"})
    buf = blob_buffer(blob_text("k_verbose", 4096))
    m = rt.mgpuModuleLoad(buf, 0)
    assert m and rt.mgpuModuleLoad(buf, 0) == m
    assert rt.stats()["verify_bytes"] == 4096
    err = capfd.readouterr().err
    line = [x for x in err.splitlines() if "is compared with its copy at every hit" in x]
    assert len(line) == 1 and line[0].endswith("(avx512)" if _wide_here() else "(memcmp)"), err
