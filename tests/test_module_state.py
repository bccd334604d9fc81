# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Module state as fresh as a load (issue 19, item 1): a module with module-scope state (device
globals, host-writable constants) is never handed out again from the cache; every load of it is a
driver load, as with the stock library. Modules without state keep one driver load per blob.

The fake driver gives a module whose text declares `.global ... counter` its own variable (0 at
load) that the kernel `count_up(out)` stores through `out` and increments
(tests/drivers/fake_globals.h). The classification itself (csrc/support/blob_state.c) is tested on built
and on real images (nvcc's, MLIR's)."""

import ctypes
import json
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

import mgpu_cached
from conftest import GRAPH_EAGER, CC, DATA, ROOT, blob_buffer, elf, fatbin, ptx

STATEFUL_PTX = ".global .align 4 .u32 counter;\n"
MODSTATE = DATA / "modstate"


def counter_ptx(init=None):
    decl = STATEFUL_PTX if init is None else f".global .align 4 .u32 counter = {init};\n"
    return ptx("count_up", pad=decl)


def run_rounds(rt, buf, rounds=3, unload=True):
    """LLVM <= 20 code: load, get the function, launch count_up(out) on a new stream, synchronize,
    destroy the stream, unload; the value each launch saw."""
    out = (ctypes.c_uint32 * rounds)()
    modules = []
    for i in range(rounds):
        m = rt.mgpuModuleLoad(buf, len(buf))
        f = rt.mgpuModuleGetFunction(m, b"count_up")
        s = rt.mgpuStreamCreate()
        p = ctypes.c_void_p(ctypes.addressof(out) + 4 * i)
        params = (ctypes.c_void_p * 1)(ctypes.addressof(p))
        rt.lib.mgpuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, None, 1)
        rt.mgpuStreamSynchronize(s)
        rt.mgpuStreamDestroy(s)
        if unload:
            rt.mgpuModuleUnload(m)
        modules.append(m)
    return list(out), modules


ENV = {"FAKECUDA_PARAM_SIZES": "8"}  # graph nodes hold the out pointer (fake_globals.h)


@pytest.mark.parametrize("disable", [False, True], ids=["cached", "stock"])
@pytest.mark.parametrize("init", [None, 7])
def test_counter_starts_fresh_after_every_unload(make_runtime, disable, init):
    rt = make_runtime(disable=disable, env=ENV)
    buf = blob_buffer(counter_ptx(init))
    values, _ = run_rounds(rt, buf)
    assert values == [init or 0] * 3  # stock: a driver load per launch
    if not disable:
        c = rt.fake.counts("cuModuleLoadData", "cuModuleUnload", "cuLibraryLoadData")
        assert c == {"cuModuleLoadData": 3, "cuModuleUnload": 3, "cuLibraryLoadData": 0}
        s = rt.stats()
        assert s["module_stateful_loads"] == 3 and s["module_hits"] == 0


def test_stateful_module_launches_take_the_stream_path(make_runtime):
    """Each load of a stateful blob gives new function handles: a graph exec made for one would
    never be launched again, so their launches never build one (LLVM <= 20 code would otherwise
    pay a graph instantiation per launch)."""
    rt = make_runtime(env={**ENV, "MGPU_CACHED_GRAPH": "1", **GRAPH_EAGER})
    values, _ = run_rounds(rt, blob_buffer(counter_ptx()), rounds=12)
    assert values == [0] * 12
    s = rt.stats()
    assert s["graph_instantiates"] == 0 and s["graph_launches"] == 0
    assert rt.fake.counts("cuLaunchKernel")["cuLaunchKernel"] == 12
    # a stateless module's launches on the same pattern do take the graph path
    values, _ = run_rounds(rt, blob_buffer(ptx("count_up")), rounds=12)
    assert rt.stats()["graph_launches"] > 0


@pytest.mark.parametrize("disable", [False, True], ids=["cached", "stock"])
def test_two_holders_of_a_stateful_blob_get_two_modules(make_runtime, disable):
    """Loads while an earlier load is still held: separate modules, separate state, as stock."""
    rt = make_runtime(disable=disable, env=ENV)
    buf = blob_buffer(counter_ptx())
    values, modules = run_rounds(rt, buf, rounds=3, unload=False)
    assert values == [0, 0, 0]
    assert len(set(modules)) == 3
    for m in modules:
        rt.mgpuModuleUnload(m)
    if not disable:
        assert rt.fake.count("cuModuleUnload") == 3


def test_module_kept_loaded_keeps_its_state(make_runtime):
    """LLVM >= 21 code loads once: the state persists across launches, with stock as here."""
    for disable in (False, True):
        rt = make_runtime(disable=disable, env=ENV)
        buf = blob_buffer(counter_ptx())
        m = rt.mgpuModuleLoad(buf, len(buf))
        f = rt.mgpuModuleGetFunction(m, b"count_up")
        out = (ctypes.c_uint32 * 3)()
        for i in range(3):
            p = ctypes.c_void_p(ctypes.addressof(out) + 4 * i)
            params = (ctypes.c_void_p * 1)(ctypes.addressof(p))
            rt.lib.mgpuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, None, params, None, 1)
        assert list(out) == [0, 1, 2]


@pytest.mark.parametrize("make_blob", [ptx, fatbin, elf], ids=["ptx", "fatbin", "cubin-elf"])
def test_stateless_module_is_still_one_driver_load(rt, make_blob):
    buf = blob_buffer(make_blob("k"))
    ms = set()
    for _ in range(20):
        m = rt.mgpuModuleLoad(buf, len(buf))
        ms.add(m)
        rt.launch(rt.mgpuModuleGetFunction(m, b"k"))
        rt.mgpuModuleUnload(m)
    assert len(ms) == 1
    assert rt.fake.counts("cuModuleLoadData", "cuModuleUnload", "cuLibraryLoadData") == {
        "cuModuleLoadData": 1, "cuModuleUnload": 0, "cuLibraryLoadData": 0}
    s = rt.stats()
    assert s["module_stateful_loads"] == 0 and s["module_hits"] == 19


def test_the_programs_unload_keeps_its_capture_mode_evictions_are_relaxed(make_runtime):
    """The unload of a module no cache keeps is the program's own (stock makes it): in the
    caller's capture mode, so a capture sees it as it sees stock's. An eviction is the library's
    own initiative: in relaxed mode (csrc/platform/capture.h)."""
    rt = make_runtime(env={**ENV, "MGPU_CACHED_MODULE_CACHE": "0"})
    exchanges = lambda: rt.fake.count("cuThreadExchangeStreamCaptureMode")  # noqa: E731
    unloads = lambda: rt.fake.count("cuModuleUnload")  # noqa: E731
    buf = blob_buffer(counter_ptx())
    m = rt.mgpuModuleLoad(buf, len(buf))
    x, u = exchanges(), unloads()
    rt.mgpuModuleUnload(m)
    assert unloads() == u + 1 and exchanges() == x  # stateful: unloaded as the program asked
    plain = blob_buffer(ptx("k"))
    m = rt.mgpuModuleLoad(plain, len(plain))
    x, u = exchanges(), unloads()
    rt.mgpuModuleUnload(m)  # no module kept (limit 0): evicted at once
    assert unloads() == u + 1 and exchanges() == x + 2  # the library's eviction: relaxed


def get_global(rt, module, name):
    fn = rt.lib.mgpuModuleGetGlobal
    fn.restype, fn.argtypes = None, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                     ctypes.c_char_p]
    ptr, size = ctypes.c_void_p(), ctypes.c_size_t()
    fn(ctypes.byref(ptr), ctypes.byref(size), module, name)
    return ptr.value, size.value


def test_get_global_takes_the_module_out_of_the_cache(make_runtime):
    """A variable the classification cannot see (the fake finds `counter` in an ELF's bytes, the
    classifier sees an ELF without data): once the program holds its address, the module is
    never handed out again."""
    rt = make_runtime(env=ENV)
    buf = blob_buffer(build_elf([(".text", 1, 0x6, counter_ptx())]))
    m1 = rt.mgpuModuleLoad(buf, len(buf))
    rt.mgpuModuleUnload(m1)
    m2 = rt.mgpuModuleLoad(buf, len(buf))
    assert m2 == m1 and rt.fake.count("cuModuleLoadData") == 1  # stateless: cached
    ptr, size = get_global(rt, m2, b"counter")
    assert ptr and size == 4 and rt.fake.fake_global_gets() == 1
    ctypes.c_uint32.from_address(ptr).value = 41  # the program writes the module's state
    rt.mgpuModuleUnload(m2)
    assert rt.fake.count("cuModuleUnload") == 1  # the last release unloaded it
    values, modules = run_rounds(rt, buf, rounds=2)
    # a fresh module, never 41; cached again from then on (the classifier sees no state in this
    # image), so its second round sees the first one's increment: only what the program could
    # write through mgpuModuleGetGlobal is guarded here, the rest is the classifier's job
    assert values == [0, 1] and m1 not in modules and modules[0] == modules[1]
    assert rt.stats()["module_global_uncached"] == 1


# ---- classification (csrc/support/blob_state.c) ---------------------------------------------------------

CUBIN, FATBIN, PTX = 1, 2, 3


@pytest.fixture(scope="module")
def classify(tmp_path_factory):
    if CC is None:
        pytest.skip("no C compiler")
    lib = tmp_path_factory.mktemp("blob_state") / "libblob_state.so"
    subprocess.run([CC, "-std=c11", "-D_GNU_SOURCE", "-O1", "-fPIC", "-shared", "-pthread",
                    f"-I{ROOT / 'csrc'}", "-o", str(lib), str(ROOT / "csrc" / "support" / "blob_state.c"),
                    str(ROOT / "csrc" / "support" / "thread.c"), "-ldl"], check=True)
    dll = ctypes.CDLL(str(lib))
    fn, on = dll.mc_blob_stateful, dll.mc_blob_stateful_on
    fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int]
    on.restype, on.argtypes = ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int,
                                             ctypes.c_int]

    def classify(data, kind, sm=None):
        return fn(data, len(data), kind) if sm is None else on(data, len(data), kind, sm)
    return classify


def have_zstd():
    try:
        ctypes.CDLL("libzstd.so.1")
        return True
    except OSError:
        return False


def build_elf(sections, symbols=(), machine=190, e_type=2, e_flags=0, tail_names=False,
              names_cut=0):
    """A 64-bit ELF with named sections [(name, type, flags, data or size for NOBITS)] and a
    symbol table [(name, type, section index)] (indices count the null section as 0); an
    executable (e_type 2) unless told, e_flags as given (a cubin's SM at bits 8-15). tail_names:
    the sections' names last in the section names' table (after the tables' own); names_cut: that
    table's size short of its bytes by so many (1: its last NUL left out)."""
    names = b"\0"
    offs = {}
    tables = [".shstrtab", ".strtab", ".symtab"]
    given = [s[0] for s in sections]
    for n in (tables + given if tail_names else given + tables):
        offs[n] = len(names)
        names += n.encode() + b"\0"
    strtab = b"\0"
    syms = bytes(24)
    for name, typ, shndx in symbols:
        syms += struct.pack("<IBBHQQ", len(strtab), typ | 0x10, 0, shndx, 0, 4)
        strtab += name.encode() + b"\0"
    body = b""
    heads = [bytes(64)]
    base = 64
    all_secs = list(sections) + [(".shstrtab", 3, 0, names), (".strtab", 3, 0, strtab),
                                 (".symtab", 2, 0, syms)]
    nsec = len(all_secs) + 1
    for name, typ, flags, data in all_secs:
        link = nsec - 2 if name == ".symtab" else 0
        if typ == 8:
            heads.append(struct.pack("<IIQQQQIIQQ", offs[name], 8, flags, 0, base + len(body),
                                     data, 0, 0, 4, 0))
            continue
        size = len(data) - (names_cut if name == ".shstrtab" else 0)
        heads.append(struct.pack("<IIQQQQIIQQ", offs[name], typ, flags, 0, base + len(body),
                                 size, link, 0, 1, 24 if typ == 2 else 0))
        body += data
    body += b"\0" * (-len(body) % 8)
    shoff = base + len(body)
    ehdr = bytearray(64)
    ehdr[0:4] = b"\x7fELF"
    ehdr[4], ehdr[5], ehdr[6] = 2, 1, 1
    struct.pack_into("<HHIQQQIHHHHHH", ehdr, 16, e_type, machine, 1, 0, 0, shoff, e_flags, 64, 0,
                     0, 64, nsec, nsec - 3)
    return bytes(ehdr) + body + b"".join(heads)


TEXT = (".text.k", 1, 0x6, b"\0" * 16)
SHARED = (".nv.shared.k", 8, 0x3, 1024)


def test_cubin_classification(classify):
    assert classify(elf("k"), CUBIN) == 0
    assert classify(build_elf([TEXT, SHARED]), CUBIN) == 0
    assert classify(build_elf([TEXT, (".nv.global", 8, 0x3, 4)]), CUBIN) == 1
    assert classify(build_elf([TEXT, (".nv.global.init", 1, 0x3, b"\1\0\0\0")]), CUBIN) == 1
    assert classify(build_elf([TEXT, (".data", 1, 0x3, b"\1\0\0\0")]), CUBIN) == 1  # writable
    # a __constant__: read-only section, but a symbol the host can write through
    assert classify(build_elf([TEXT, (".nv.constant3", 1, 0x2, bytes(16))],
                              [("c_tab", 1, 2)]), CUBIN) == 1
    assert classify(build_elf([TEXT], [(".nv.reservedSmem.offset0", 1, 0)]), CUBIN) == 0  # undef
    assert classify(build_elf([TEXT], [("k", 2, 1)]), CUBIN) == 0  # a function
    assert classify(build_elf([TEXT], machine=62), CUBIN) == 1  # not a GPU ELF: cannot tell
    no_names = bytearray(elf("k"))
    no_names[0x3E:0x40] = b"\0\0"  # e_shstrndx 0
    assert classify(bytes(no_names), CUBIN) == 1
    assert classify(elf("k")[:200], CUBIN) == 1  # tables outside the bytes given


def test_cubin_section_names_at_the_end_of_their_table(classify):
    """A section's name is compared with `.nv.global` in one 10-byte comparison where the names'
    table holds 10 bytes from it, character by character nearer its end; a table that does not
    end in a NUL leaves its last name unreadable (cannot tell: stateful)."""
    def last(name, cut=0, flags=0x2):
        return build_elf([TEXT, (name, 1, flags, bytes(4))], tail_names=True, names_cut=cut)
    assert classify(last(".nv.gl"), CUBIN) == 0  # 7 bytes left: character by character
    assert classify(last(".nv.globa"), CUBIN) == 0  # 10 bytes left: its NUL differs from 'l'
    assert classify(last(".nv.global"), CUBIN) == 1
    assert classify(last(".nv.global.init"), CUBIN) == 1
    assert classify(last(".nv.gl", cut=1), CUBIN) == 1  # no NUL after it: unreadable
    assert classify(last(".nv.constant0.k", cut=0), CUBIN) == 0
    assert classify(build_elf([(".nv.global", 8, 0x3, 4), TEXT], tail_names=True), CUBIN) == 1


def test_amdgpu_code_object_classification(classify):
    assert classify((DATA / "rocm" / "saxpy_gfx942.hsaco").read_bytes(), CUBIN) == 0
    loader = [(".dynamic", 6, 0x3, bytes(16)), (".got", 1, 0x3, bytes(8))]
    assert classify(build_elf([TEXT] + loader, [("k.kd", 1, 1)], machine=224), CUBIN) == 0
    assert classify(build_elf([TEXT, (".bss", 8, 0x3, 4)], machine=224), CUBIN) == 1
    assert classify(build_elf([TEXT, (".rodata", 1, 0x2, bytes(8))], [("table", 1, 2)],
                              machine=224), CUBIN) == 1


@pytest.mark.parametrize("text,state", [
    ("", 0),
    (".global .align 4 .u32 g;\n", 1),
    (".visible .global .align 4 .u32 g = 5;\n", 1),
    (".global .align 1 .b8 $str[3] = {104, 105};\n", 1),  # a printf format: writable
    (".const .align 4 .b8 c_tab[16];\n", 1),
    (".global .texref t;\n", 1),
    ("// .globl k\n", 0),
    ("#define G .global\n", 1),
    (".visible .entry e(\n .param .u64 .ptr .global .align 16 p\n)\n{\n ld.global.u32 %r1, [p];"
     "\n cvta.to.global.u64 %rd1, %rd2;\n ld.const.u32 %r2, [c];\n ret;\n}\n", 0),
    (".visible .entry e(\n .param .u64 .ptr.global.align 16 p\n)\n{\n ret;\n}\n", 0),
    (".visible .entry e(\n .param .u64 .ptr p\n)\n{\n .global .u32 x;\n ret;\n}\n", 1),
])
def test_ptx_classification(classify, text, state):
    assert classify(ptx("k", pad=text), PTX) == state


def fatbin_entry(kind, payload, flags=0x11, csize=0, dsize=0):
    payload += b"\0" * (-len(payload) % 8)
    return struct.pack("<HHIQIIHHIIIQQQ", kind, 0x101, 64, len(payload), csize, 64, 0, 8, 90, 0,
                       0, flags, 0, dsize) + payload


def container(*entries):
    body = b"".join(entries)
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body


def real_entries(data):
    """The (header, payload) of each entry of a real fatbin."""
    hs, fs = struct.unpack_from("<HQ", data, 6)
    pos, out = hs, []
    while pos < hs + fs:
        ehs, size = struct.unpack_from("<IQ", data, pos + 4)
        out.append(data[pos:pos + ehs + size])
        pos += ehs + size
    return out


def test_fatbin_classification(classify):
    assert classify(fatbin("k"), FATBIN) == 0
    assert classify(container(fatbin_entry(1, ptx("k", pad=STATEFUL_PTX))), FATBIN) == 1
    assert classify(container(fatbin_entry(2, elf("k")), fatbin_entry(1, ptx("k"))), FATBIN) == 0
    assert classify(container(fatbin_entry(2, build_elf([TEXT, (".nv.global", 8, 0x3, 4)]))),
                    FATBIN) == 1
    assert classify(container(fatbin_entry(4, ptx("k"))), FATBIN) == 1  # unknown kind
    assert classify(container(fatbin_entry(1, ptx("k"), csize=10)), FATBIN) == 1  # compressed how?
    assert classify(container(fatbin_entry(1, b"\xff" * 64, flags=0x8011, csize=64, dsize=100)),
                    FATBIN) == 1  # not zstd data
    assert classify(container(), FATBIN) == 1  # no entry: cannot tell


@pytest.mark.skipif(not have_zstd(), reason="no libzstd.so.1: compressed entries read as stateful")
def test_real_images_classification(classify):
    for name in ("kernels", "state_kernels"):
        d = MODSTATE if name == "state_kernels" else DATA
        want = 1 if name == "state_kernels" else 0
        assert classify((d / f"{name}.cubin").read_bytes(), CUBIN) == want
        assert classify((d / f"{name}.ptx").read_bytes() + b"\0", PTX) == want
        assert classify((d / f"{name}.fatbin").read_bytes(), FATBIN) == want
    assert classify((DATA / "alloc_kernels.fatbin").read_bytes(), FATBIN) == 0
    # the stateless cubin entry of kernels.fatbin with the zstd-compressed PTX entry of the
    # stateful one: the PTX is decompressed and read
    k_elf, k_ptx = real_entries((DATA / "kernels.fatbin").read_bytes())
    s_elf, s_ptx = real_entries((MODSTATE / "state_kernels.fatbin").read_bytes())
    assert struct.unpack_from("<Q", s_ptx, 40)[0] & 0x8000  # zstd, as CUDA 13 writes it
    assert classify(container(k_elf, k_ptx), FATBIN) == 0
    assert classify(container(k_elf, s_ptx), FATBIN) == 1
    assert classify(container(s_elf, k_ptx), FATBIN) == 1
    # on an sm_90 device the driver loads the sm_90 cubin: only it is read (the PTX is neither
    # decompressed nor its decompressor loaded); on another architecture or with no architecture
    # (the caller's answer under CUDA_FORCE_PTX_JIT) every entry is read
    assert classify(container(k_elf, s_ptx), FATBIN, sm=90) == 0
    assert classify(container(s_elf, k_ptx), FATBIN, sm=90) == 1
    assert classify(container(k_elf, s_ptx), FATBIN, sm=80) == 1
    assert classify(container(k_elf, s_ptx), FATBIN, sm=0) == 1
    # the entry taken for the one loaded must be an uncompressed executable for exactly sm (else
    # every entry is read): a relocatable (-rdc) cubin, one whose e_flags name another SM, a
    # compressed one, or a broken header after a matching entry
    sm90 = 90 << 8
    plain = fatbin_entry(2, build_elf([TEXT], e_flags=sm90))
    stateful_ptx = fatbin_entry(1, ptx("k", pad=STATEFUL_PTX))
    assert classify(container(plain, stateful_ptx), FATBIN, sm=90) == 0
    assert classify(container(plain, stateful_ptx), FATBIN, sm=89) == 1
    assert classify(container(fatbin_entry(2, build_elf([TEXT], e_type=1, e_flags=sm90)),
                              stateful_ptx), FATBIN, sm=90) == 1
    assert classify(container(fatbin_entry(2, build_elf([TEXT], e_flags=80 << 8)), stateful_ptx),
                    FATBIN, sm=90) == 1
    assert classify(container(fatbin_entry(2, b"\xff" * 64, flags=0x8011, csize=64, dsize=100),
                              stateful_ptx), FATBIN, sm=90) == 1
    assert classify(container(plain, stateful_ptx)[:-8], FATBIN, sm=90) == 1
    # two entries for sm: both are read, and one has state
    stateful_elf = fatbin_entry(2, build_elf([TEXT, (".nv.global", 8, 0x3, 4)], e_flags=sm90))
    assert classify(container(plain, stateful_elf, fatbin_entry(1, ptx("k"))), FATBIN, sm=90) == 1
    broken = bytearray(k_ptx)
    struct.pack_into("<Q", broken, 56, struct.unpack_from("<Q", k_ptx, 56)[0] + 1)  # size lies
    assert classify(container(k_elf, bytes(broken)), FATBIN) == 1
    # the fatbins of the MLIR programs: the committed benchmarks have no state, counter.mlir has
    objs = sorted((DATA / "mlir").glob("*_llvm*.o")) + sorted((DATA / "conc").glob("*.o"))
    seen = 0
    for o in objs + sorted(MODSTATE.glob("counter_llvm*.o")):
        b = o.read_bytes()
        i = b.find(struct.pack("<I", 0xBA55ED50))
        if i < 0:
            continue
        hs, fs = struct.unpack_from("<HQ", b, i + 6)
        assert classify(b[i:i + hs + fs], FATBIN) == (1 if "counter" in o.name else 0), o.name
        seen += 1
    assert seen >= 10
    assert {o.name for o in MODSTATE.glob("counter_llvm*.o")} == {"counter_llvm19.o",
                                                                   "counter_llvm22.o"}


# ---- the MLIR program (counter.mlir, LLVM 19 and 22) on the fake driver ------------------------

COUNTED = ["cuLibraryLoadData", "cuLibraryUnload", "cuModuleLoadData", "cuModuleUnload",
           "cuLaunchKernel"]
STEPS = 4


@pytest.mark.skipif(not have_zstd(), reason="no libzstd.so.1")
@pytest.mark.parametrize("disable", [False, True], ids=["cached", "stock"])
@pytest.mark.parametrize("llvm", [19, 22])
def test_mlir_module_global_program_loads(tmp_path, fake_driver_build, llvm, disable):
    """counter_llvm19.o loads its module around every launch: the module has a memref.global, so
    each load is a driver load. counter_llvm22.o loads it once, in a global constructor, and
    unloads it in a global destructor: one driver load, as stock. (What the GPU test,
    tests/gpu/test_module_state_gpu.py, relies on; the fake does not see MLIR's variable, so the
    values themselves are checked there.)"""
    if CC is None:
        pytest.skip("no C compiler")
    exe = tmp_path / "counter"
    subprocess.run([CC, "-std=c11", "-o", str(exe), str(MODSTATE / "counter_main.c"),
                    str(MODSTATE / f"counter_llvm{llvm}.o"), *mgpu_cached.ldflags_list(), "-ldl"],
                   check=True)
    stats = tmp_path / "stats.json"
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake_driver_build),
               HARNESS_FAKE_COUNTS=",".join(COUNTED), MGPU_CACHED_STATS_FILE=str(stats))
    env.pop("MGPU_CACHED_DISABLE", None)
    if disable:
        env["MGPU_CACHED_DISABLE"] = "1"
    p = subprocess.run([str(exe), str(STEPS)], env=env, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0 and p.stderr == "", p.stdout + p.stderr
    c = {l.split()[1]: int(l.split()[2]) for l in p.stdout.splitlines() if l.startswith("count")}
    loads = STEPS if llvm == 19 else 1
    # counted at the end of main: LLVM 22's destructor unloads after that
    unloads = STEPS if llvm == 19 else 0
    # the same driver calls in both modes (the cache never caches a module with state)
    assert c == {"cuLibraryLoadData": 0, "cuLibraryUnload": 0, "cuModuleLoadData": loads,
                 "cuModuleUnload": unloads, "cuLaunchKernel": STEPS}
    if not disable:
        st = json.loads(stats.read_text())["stats"]  # written at exit, after the destructors
        assert st["module_stateful_loads"] == loads and st["module_hits"] == 0
        assert st["driver_module_loads"] == loads and st["driver_module_unloads"] == loads


# The toolchains counter_llvm{19,22}.o were made with (tests/data/modstate/compile.sh; LLVM 22
# through benchmarks/mlir/setup_trixie.sh's wrappers): other versions make other (valid) bytes.
TOOLS = {19: "LLVM version 19.1.7", 22: "LLVM version 22.1.8", "ptxas": "V13.0.88"}


@pytest.mark.parametrize("llvm", [19, 22])
def test_committed_counter_objects_are_what_compile_sh_makes(tmp_path, llvm):
    """Where the toolchain is installed (MLIR_BIN, default /opt/mlirtc/bin, or mlir-opt-N on
    PATH), compile.sh remakes the committed object byte for byte."""
    bindir = Path(os.environ.get("MLIR_BIN", "/opt/mlirtc/bin"))
    opt = bindir / f"mlir-opt-{llvm}"
    opt_path = str(opt) if opt.exists() else shutil.which(f"mlir-opt-{llvm}")
    ptxas = Path(os.environ.get("CUDA_PATH_DIR", "/usr/local/cuda")) / "bin" / "ptxas"
    if opt_path is None or not ptxas.exists():
        pytest.skip(f"mlir-opt-{llvm} or {ptxas} not installed")
    have = subprocess.run([opt_path, "--version"], capture_output=True, text=True).stdout
    have_ptxas = subprocess.run([str(ptxas), "--version"], capture_output=True, text=True).stdout
    if TOOLS[llvm] not in have or TOOLS["ptxas"] not in have_ptxas:
        pytest.skip(f"made by {TOOLS[llvm]} and ptxas {TOOLS['ptxas']}, not these")
    subprocess.run(["sh", str(MODSTATE / "compile.sh"), str(llvm), str(tmp_path)], check=True,
                   capture_output=True)
    made = (tmp_path / f"counter_llvm{llvm}.o").read_bytes()
    assert made == (MODSTATE / f"counter_llvm{llvm}.o").read_bytes()


# ---- the HIP backend: the same rule (the cache sits above both backends) ------------------------

@pytest.mark.parametrize("stateful", [False, True])
def test_hip_code_object_with_state_is_loaded_per_load(make_hip_runtime, stateful):
    rt = make_hip_runtime()
    secs = [(".text", 1, 0x6, ptx("k"))] + ([(".bss", 8, 0x3, 4)] if stateful else [])
    buf = blob_buffer(build_elf(secs, [("k.kd", 1, 1)], machine=224))
    for _ in range(3):
        m = rt.mgpuModuleLoad(buf, len(buf))
        rt.launch(rt.mgpuModuleGetFunction(m, b"k"))
        rt.mgpuModuleUnload(m)
    n = 3 if stateful else 1
    assert rt.fake.count("hipModuleLoadData") == n
    assert rt.fake.count("hipModuleUnload") == (3 if stateful else 0)


@pytest.mark.parametrize("case", ["sm90", "force_jit", "mixed_devices"])
def test_fatbin_verdict_follows_the_entry_the_device_loads(make_runtime, case):
    """A fatbin of a stateless sm_90 cubin and a stateful, zstd-compressed PTX entry, on the fake's
    sm_90 device: the driver loads the cubin, so the module is cached (the architecture asked once
    per device: cuDeviceGetAttribute major and minor). With CUDA_FORCE_PTX_JIT the driver compiles
    the PTX, and with a second device of another architecture (8.0) the PTX is what that device
    loads: there every load is a driver load, as the state of the PTX requires."""
    k_elf, _ = real_entries((DATA / "kernels.fatbin").read_bytes())
    _, s_ptx = real_entries((MODSTATE / "state_kernels.fatbin").read_bytes())
    env = {"force_jit": {"CUDA_FORCE_PTX_JIT": "1"}, "mixed_devices": {"FAKECUDA_SM": "90,80"},
           "sm90": {}}[case]
    rt = make_runtime(devices=2 if case == "mixed_devices" else 1, env=env)
    buf = blob_buffer(container(k_elf, s_ptx))
    other = blob_buffer(container(k_elf, s_ptx))  # a second blob: a second miss
    for b in (buf, buf, buf, other):
        m = rt.mgpuModuleLoad(b, len(b))
        assert m
        rt.mgpuModuleUnload(m)
    s = rt.stats()
    if case == "sm90":
        assert s["module_stateful_loads"] == 0 and rt.fake.count("cuModuleLoadData") == 2
        assert rt.fake.count("cuDeviceGetAttribute") == 2  # once per device, both misses
    else:
        assert s["module_stateful_loads"] == 4 and rt.fake.count("cuModuleLoadData") == 4
