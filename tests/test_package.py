# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The installed package: the library's exports and dependencies, the stock-named copy, the CLI."""

import ctypes
import os
import shutil
import subprocess
import sys

import pytest

import mgpu_cached
from conftest import CC, DATA, ROOT


def exported(path):
    if not shutil.which("nm"):
        pytest.skip("nm (binutils) is not installed")
    out = subprocess.run(["nm", "-D", "--defined-only", str(path)], check=True,
                         capture_output=True, text=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def test_exports_every_stock_cuda_symbol():
    stock = set((DATA / "stock-cuda-exports.txt").read_text().split())
    assert len(stock) == 27
    assert stock <= exported(mgpu_cached.library_path())
    lib = ctypes.CDLL(str(mgpu_cached.library_path()))
    for name in stock:
        assert getattr(lib, name)


def test_exports_every_stock_sparse_symbol_without_linking_cusparse():
    stock = set((DATA / "stock-cuda-sparse-exports.txt").read_text().split())
    assert len(stock) == 32
    assert stock <= exported(mgpu_cached.library_path())
    assert stock <= exported(mgpu_cached.stock_libdir() / "libmlir_cuda_runtime.so")
    if shutil.which("readelf"):
        out = subprocess.run(["readelf", "-d", str(mgpu_cached.library_path())], check=True,
                             capture_output=True, text=True).stdout
        assert "cusparse" not in out.lower()


def test_exports_every_stock_rocm_symbol():
    stock = set((DATA / "stock-rocm-exports.txt").read_text().split())
    assert len(stock) == 27
    assert stock <= exported(mgpu_cached.library_path())
    copy = mgpu_cached.stock_libdir() / "libmlir_rocm_runtime.so"
    assert exported(copy) == exported(mgpu_cached.library_path())
    out = subprocess.run(["readelf", "-d", str(copy)], capture_output=True, text=True).stdout
    assert "[libmlir_rocm_runtime.so]" in out


def test_no_cxx_runtime_and_no_driver_link_dependency():
    if not shutil.which("readelf"):
        pytest.skip("readelf (binutils) is not installed")
    out = subprocess.run(["readelf", "-d", str(mgpu_cached.library_path())], check=True,
                         capture_output=True, text=True).stdout
    needed = [l.split("[")[1].rstrip("]") for l in out.splitlines() if "(NEEDED)" in l]
    assert needed and all(n.startswith(("libc.so", "ld-linux", "libdl.so", "libpthread.so"))
                          for n in needed), needed
    assert "(SONAME)" in out and "[libmgpu_cached.so]" in out


def test_stock_named_copy():
    copy = mgpu_cached.stock_libdir() / "libmlir_cuda_runtime.so"
    assert copy.is_file()
    assert exported(copy) == exported(mgpu_cached.library_path())
    out = subprocess.run(["readelf", "-d", str(copy)], capture_output=True, text=True).stdout
    assert "[libmlir_cuda_runtime.so]" in out


def cli(*args):
    return subprocess.run([sys.executable, "-m", "mgpu_cached", *args], check=True,
                          capture_output=True, text=True).stdout.strip()


def test_cli_paths_and_flags():
    libdir = cli("--libdir")
    assert (mgpu_cached.library_path().parent == type(mgpu_cached.libdir())(libdir))
    assert cli("--ldflags") == f"-L{libdir} -lmgpu_cached -Wl,-rpath,{libdir}"
    assert cli("--preload") == f"LD_PRELOAD={libdir}/libmgpu_cached.so"
    assert cli("--stock-libdir") == f"{libdir}/stock-name"
    assert cli("--includedir") == str(mgpu_cached.include_dir())
    assert cli("--cflags") == f"-I{mgpu_cached.include_dir()}"
    assert cli("--pkgconfig-dir") == f"{libdir}/pkgconfig"
    assert cli("--cmake-dir") == f"{libdir}/cmake/mgpu_cached"
    assert "mgpu-cached 0.1.0" in cli()


def test_cli_stats_of_a_command(tmp_path, fake_driver_build):
    """`mgpu-cached stats -- CMD` preloads the library into CMD and reports its counters."""
    if CC is None:
        pytest.skip("no C compiler")
    # A stand-in "stock" runtime that does nothing; the program is linked against it.
    stub = tmp_path / "libmlir_cuda_runtime.so"
    (tmp_path / "stub.c").write_text(
        "void *mgpuStreamCreate(void) { return 0; } void mgpuStreamDestroy(void *s) { (void)s; }\n")
    subprocess.run([CC, "-shared", "-fPIC", "-o", str(stub), str(tmp_path / "stub.c")], check=True)
    src = tmp_path / "prog.c"
    src.write_text(
        "void *mgpuStreamCreate(void); void mgpuStreamDestroy(void *);\n"
        "int main(void) { for (int i = 0; i < 5; ++i) mgpuStreamDestroy(mgpuStreamCreate());"
        " return 0; }\n")
    exe = tmp_path / "prog"
    subprocess.run([CC, "-o", str(exe), str(src), f"-L{tmp_path}", "-lmlir_cuda_runtime",
                    f"-Wl,-rpath,{tmp_path}"], check=True)
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake_driver_build))
    env.pop("MGPU_CACHED_DISABLE", None)
    out = subprocess.run([sys.executable, "-m", "mgpu_cached", "stats", "--json", "--", str(exe)],
                         env=env, check=True, capture_output=True, text=True).stdout
    import json
    stats = json.loads(out)
    # one driver stream, made for the first handle and pooled for the next four (pool.h: a
    # destroyed stream is parked without a query; the device's first creates poll it rather than
    # make another beside it, MGPU_CACHED_POOL_SPARE_AFTER)
    assert stats["stream_creates"] == 5 and stats["stream_destroys"] == 5
    assert stats["driver_stream_creates"] == 1 and stats["stream_pool_hits"] == 4
    assert stats["live_streams"] == 0


def test_link_with_ldflags(tmp_path, fake_driver_build):
    if CC is None:
        pytest.skip("no C compiler")
    src = tmp_path / "main.c"
    src.write_text(
        "#include <stdio.h>\n#include <stdint.h>\n#include <stdbool.h>\n"
        "void *mgpuMemAlloc(uint64_t, void *, bool); void mgpuMemFree(void *, void *);\n"
        "int main(void) { void *p = mgpuMemAlloc(16, 0, false);"
        " printf(p ? \"allocated\\n\" : \"null\\n\"); mgpuMemFree(p, 0); return 0; }\n")
    exe = tmp_path / "main"
    subprocess.run([CC, "-o", str(exe), str(src), *mgpu_cached.ldflags_list()], check=True)
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake_driver_build))
    out = subprocess.run([str(exe)], env=env, check=True, capture_output=True, text=True)
    assert out.stdout == "allocated\n" and out.stderr == ""


def test_python_api_without_gpu():
    rt = mgpu_cached.runtime()
    assert rt.version == mgpu_cached.__version__
    assert rt.backend == "cuda"
    names = list(mgpu_cached.stats())
    assert names[:3] == ["module_loads", "module_hits", "module_misses"]
    assert all(rt.descriptions()[n] for n in names)


# ---- packaging: stripped library, build command line, licence, links, examples ------------------

SPDX = "SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception"


def section_names(path):
    """The section names of an ELF64 little-endian file (no binutils needed)."""
    import struct
    data = path.read_bytes()
    assert data[:6] == b"\x7fELF\x02\x01", path
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    def header(i):
        return struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)
    strtab_off = header(shstrndx)[4]
    names = []
    for i in range(shnum):
        name_off = header(i)[0]
        end = data.index(b"\0", strtab_off + name_off)
        names.append(data[strtab_off + name_off:end].decode())
    return names


def test_the_library_and_its_copies_are_stripped():
    for path in (mgpu_cached.library_path(),
                 mgpu_cached.stock_libdir() / "libmlir_cuda_runtime.so",
                 mgpu_cached.stock_libdir() / "libmlir_rocm_runtime.so"):
        names = section_names(path)
        assert ".dynsym" in names and ".text" in names, path
        assert ".symtab" not in names and not any(n.startswith(".debug") for n in names), \
            (path, names)


def build_script(*args, cwd):
    return subprocess.run([sys.executable, str(ROOT / "build_runtime.py"), *args], cwd=cwd,
                          capture_output=True, text=True)


def test_build_script_help_builds_nothing(tmp_path):
    p = build_script("--help", cwd=tmp_path)
    assert p.returncode == 0 and p.stdout.startswith("usage: python build_runtime.py")
    assert "--no-strip" in p.stdout and "OUT_DIR" in p.stdout
    assert list(tmp_path.iterdir()) == []  # no folder named --help
    bad = build_script("--bogus", cwd=tmp_path)
    assert bad.returncode == 2 and "unrecognized arguments: --bogus" in bad.stderr
    assert list(tmp_path.iterdir()) == []


def test_build_script_no_strip_keeps_the_symbol_table(tmp_path):
    if CC is None:
        pytest.skip("no C compiler")
    p = build_script("--no-strip", str(tmp_path / "lib"), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert ".symtab" in section_names(tmp_path / "lib" / "libmgpu_cached.so")
    assert str(tmp_path / "lib" / "libmgpu_cached.so") in p.stdout.splitlines()


def test_license_is_the_full_apache_text_with_the_llvm_exceptions():
    text = (ROOT / "LICENSE").read_text()
    for part in ("Apache License\n                           Version 2.0, January 2004",
                 "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION",
                 "9. Accepting Warranty or Additional Liability.", "END OF TERMS AND CONDITIONS",
                 "APPENDIX: How to apply the Apache License to your work.",
                 "---- LLVM Exceptions to the Apache 2.0 License ----",
                 "only with respect to the Combined\nSoftware."):
        assert part in text, part
    assert 'license = "Apache-2.0 WITH LLVM-exception"' in (ROOT / "pyproject.toml").read_text()


def project_urls():
    urls, inside = {}, False
    for line in (ROOT / "pyproject.toml").read_text().splitlines():
        if line.startswith("["):
            inside = line.strip() == "[project.urls]"
        elif inside and "=" in line:
            key, value = line.split("=", 1)
            urls[key.strip()] = value.strip().strip('"')
    return urls


def test_project_urls_name_files_of_the_source_distribution():
    urls = project_urls()
    assert {"Homepage", "Documentation", "Changelog"} <= set(urls)
    for label, url in urls.items():
        assert "example" not in url and "TODO" not in url and "<" not in url, (label, url)
        if "://" not in url:
            assert (ROOT / url).is_file(), (label, url)


def test_examples_install_from_the_checkout():
    examples = ROOT / "examples"
    for path in sorted(examples.rglob("*")):
        if path.suffix not in (".md", ".sh", ".txt", ".py") and path.name != "CMakeLists.txt":
            continue
        text = path.read_text()
        assert "pip install mgpu-cached" not in text and "pip install mgpu_cached" not in text, \
            path
        for line in text.splitlines():
            if "pip install" in line:  # a path: the checkout's root, relative to the example
                target = line.split("pip install", 1)[1].split()[0]
                assert (path.parent / target / "pyproject.toml").is_file(), (path, line)


def test_python_files_and_scripts_carry_the_spdx_line():
    files = sorted((ROOT / "src" / "mgpu_cached").glob("*.py")) + [ROOT / "build_runtime.py"]
    files += [p for p in (ROOT / ".ci" / "run", ROOT / ".ci" / "artifacts") if p.exists()]
    for path in files:
        assert SPDX in "".join(path.read_text().splitlines(True)[:3]), path
