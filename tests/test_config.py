# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Configuration: every environment variable is read in one place (csrc/support/config.c, from the table
MC_CONFIG_VARS), an invalid value is reported in one line and its default used, a value out of its
range is clamped with one line, a misspelt MGPU_CACHED_* name is reported once with the closest
known name, and `mgpu-cached --help` and the library's own table list the same variables
(tests/test_docs.py: the docs name each of them)."""

import json
import os
import re
import subprocess
import sys

import pytest

import mgpu_cached
from conftest import blob_buffer, ptx, ROOT

_PROBE = ("import json, mgpu_cached; "
          "print(json.dumps({s.name: [s.value, s.explicit] for s in "
          "mgpu_cached.Runtime().config()}))")


def parse(**env):
    """A fresh process parses the environment: (values in use, explicit flags, stderr lines)."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("MGPU_CACHED")}
    full.update(env)
    p = subprocess.run([sys.executable, "-c", _PROBE], env=full, capture_output=True, text=True,
                       check=True)
    table = json.loads(p.stdout)
    return ({k: v[0] for k, v in table.items()}, {k: v[1] for k, v in table.items()},
            p.stderr.splitlines())


@pytest.mark.parametrize("name,value,used,why", [
    ("MGPU_CACHED_ALLOCATOR_CACHE_BYTES", "-1", "2147483648", "is not a byte count"),
    ("MGPU_CACHED_ALLOCATOR_CACHE_BYTES", "12X", "2147483648", "is not a byte count"),
    ("MGPU_CACHED_ALLOCATOR_CACHE_BYTES", "17179869184G", "2147483648", "is out of range"),
    ("MGPU_CACHED_ALLOCATOR_CACHE_BYTES", "1G5", "2147483648", "is not a byte count"),
    ("MGPU_CACHED_STREAM_CAP", "abc", "64", "is not a non-negative decimal integer"),
    ("MGPU_CACHED_STREAM_CAP", " 8", "64", "is not a non-negative decimal integer"),
    ("MGPU_CACHED_STREAM_CAP", "99999999999999999999", "64", "is out of range"),
    ("MGPU_CACHED_MODULE_CACHE", "-5", "256", "is not a non-negative decimal integer"),
    ("MGPU_CACHED_DISABLE", "maybe", "0", "is not 1/0"),
    ("MGPU_CACHED_ALLOCATOR", "2", "1", "is not 1/0"),
])
def test_invalid_value_is_reported_in_one_line_and_the_default_used(name, value, used, why):
    values, explicit, err = parse(**{name: value})
    assert values[name] == used and not explicit[name]
    default = used if name != "MGPU_CACHED_ALLOCATOR_CACHE_BYTES" else "2G"
    assert err == [f"mgpu-cached: {name}='{value}' {why}" +
                   err[0][len(f"mgpu-cached: {name}='{value}' {why}"):]], err
    assert err[0].endswith(f"; using the default {default}")


def test_invalid_backend_is_reported_and_the_choice_stays_automatic():
    values, explicit, err = parse(MGPU_CACHED_BACKEND="CUDA")
    assert values["MGPU_CACHED_BACKEND"] == "auto" and not explicit["MGPU_CACHED_BACKEND"]
    assert err == ["mgpu-cached: MGPU_CACHED_BACKEND='CUDA' is not one of auto, cuda, hip; "
                   "using auto"]


@pytest.mark.parametrize("name,value,used", [
    ("MGPU_CACHED_ALLOCATOR_CACHE_BYTES", "512MiB", str(512 << 20)),
    ("MGPU_CACHED_ALLOCATOR_CACHE_BYTES", "3k", "3072"),
    ("MGPU_CACHED_ALLOCATOR_CACHE_BYTES", "0", "0"),
    ("MGPU_CACHED_ALLOCATOR_CACHE_BYTES", "16777215G", str(16777215 << 30)),
    ("MGPU_CACHED_STREAM_CAP", "0", "0"),
    ("MGPU_CACHED_DISABLE", "Yes", "1"),
    ("MGPU_CACHED_ALLOCATOR", "off", "0"),
    ("MGPU_CACHED_BACKEND", "hip", "hip"),
    ("MLIR_CUDA_DEBUG", "", "1"),
])
def test_valid_values_are_taken_silently(name, value, used):
    values, explicit, err = parse(**{name: value})
    assert values[name] == used and explicit[name] and err == []


def test_empty_value_is_the_default_silently():
    values, explicit, err = parse(MGPU_CACHED_STREAM_CAP="", MGPU_CACHED_CUDA_DRIVER="")
    assert values["MGPU_CACHED_STREAM_CAP"] == "64"
    assert values["MGPU_CACHED_CUDA_DRIVER"] == "libcuda.so.1"
    assert not explicit["MGPU_CACHED_CUDA_DRIVER"] and err == []


def test_the_parsed_value_is_the_one_the_library_uses(make_runtime, capfd):
    """MGPU_CACHED_STREAM_CAP=abc falls back to 64 driver streams, not to 0 (= no cap) or to
    whatever strtoul made of it: at 64 bound idle handles, the next bind reclaims one of theirs."""
    rt = make_runtime(env={"MGPU_CACHED_STREAM_CAP": "abc", "MGPU_CACHED_STREAM_HANDLES": "tagged"})
    f = rt.mgpuModuleGetFunction(rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0), b"k")
    streams = [rt.mgpuStreamCreate() for _ in range(64)]
    drivers = [rt.driver_stream(f, s) for s in streams]  # 64 bound, idle (the fake's work is done)
    assert rt.fake.count("cuStreamCreate") == 64
    extra = rt.driver_stream(f, rt.mgpuStreamCreate())
    assert rt.fake.count("cuStreamCreate") == 64, "at the default cap an idle one is reclaimed"
    assert extra in drivers and rt.stats()["stream_reclaims"] == 1
    assert "MGPU_CACHED_STREAM_CAP='abc'" in capfd.readouterr().err


def test_stats_file_in_a_missing_directory_is_reported(tmp_path):
    target = tmp_path / "no-such-dir" / "stats.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MGPU_CACHED")}
    env["MGPU_CACHED_STATS_FILE"] = str(target)
    p = subprocess.run([sys.executable, "-c", "import mgpu_cached; mgpu_cached.stats()"],
                       env=env, capture_output=True, text=True, check=True)
    lines = p.stderr.splitlines()
    assert lines[0] == (f"mgpu-cached: MGPU_CACHED_STATS_FILE='{target}': cannot write "
                        f"'{target}': No such file or directory; printing the statistics here "
                        "instead")
    assert lines[1].startswith("mgpu-cached statistics (enabled")
    assert any(line.split() == ["module_loads", "0"] for line in lines)
    assert not target.parent.exists()


def test_stats_file_per_process(tmp_path):
    """%p in MGPU_CACHED_STATS_FILE is the process id; a second copy of the library in the same
    process writes its own file (NAME.2) instead of overwriting the first."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MGPU_CACHED")}
    env["MGPU_CACHED_STATS_FILE"] = str(tmp_path / "s-%p.json")
    code = ("import os, shutil, sys, mgpu_cached; "
            f"shutil.copy(mgpu_cached.library_path(), {str(tmp_path / 'copy.so')!r}); "
            f"mgpu_cached.Runtime({str(tmp_path / 'copy.so')!r}).stats(); mgpu_cached.stats(); "
            "print(os.getpid())")
    pid = int(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True).stdout)
    files = sorted(p.name for p in tmp_path.glob("s-*"))
    assert files == [f"s-{pid}.json", f"s-{pid}.json.2"]
    for f in files:
        data = json.loads((tmp_path / f).read_text())
        assert data["pid"] == pid and data["version"] == mgpu_cached.__version__


def test_no_getenv_outside_config_c():
    """One place parses the environment: no other C file calls getenv or reads environ."""
    offenders = [p.name for p in (ROOT / "csrc").rglob("*.c")
                 if p.name != "config.c" and re.search(r"\bgetenv\s*\(|\benviron\b",
                                                       p.read_text())]
    assert offenders == []


@pytest.mark.parametrize("value,why", [
    ("-1", "is not a device ordinal (0, 1, ...) or local-rank"),
    ("x", "is not a device ordinal (0, 1, ...) or local-rank"),
    ("2x", "is not a device ordinal (0, 1, ...) or local-rank"),
    ("Local-Rank", "is not a device ordinal (0, 1, ...) or local-rank"),
    ("99999999999", "is out of range"),
])
def test_invalid_device_is_reported_and_left_unset(value, why):
    """MGPU_CACHED_DEVICE is parsed by config.c like every other variable: -1 used to become
    device 0 in silence."""
    values, explicit, err = parse(MGPU_CACHED_DEVICE=value)
    assert values["MGPU_CACHED_DEVICE"] == "" and not explicit["MGPU_CACHED_DEVICE"]
    assert err == [f"mgpu-cached: MGPU_CACHED_DEVICE='{value}' {why}; using the default (unset)"]


def test_valid_device_is_taken_silently_as_the_library_reads_it():
    for value, used in [("3", "3"), ("03", "3"), ("local-rank", "local-rank")]:
        values, explicit, err = parse(MGPU_CACHED_DEVICE=value)
        assert values["MGPU_CACHED_DEVICE"] == used and explicit["MGPU_CACHED_DEVICE"], value
        assert err == [], value


def test_invalid_device_runs_on_device_0_with_one_message(make_runtime, capfd):
    rt = make_runtime(devices=2, env={"MGPU_CACHED_DEVICE": "-1"})
    f = rt.mgpuModuleGetFunction(rt.mgpuModuleLoad(blob_buffer(ptx("k")), 0), b"k")
    s = rt.mgpuStreamCreate()
    rt.launch(f, stream=s)
    rt.mgpuStreamSynchronize(s)
    assert rt.fake.fake_stream_device(s) == 0
    err = [line for line in capfd.readouterr().err.splitlines() if "MGPU_CACHED_DEVICE" in line]
    assert err == ["mgpu-cached: MGPU_CACHED_DEVICE='-1' is not a device ordinal (0, 1, ...) or "
                   "local-rank; using the default (unset)"]


@pytest.mark.parametrize("name,low,high", [("MGPU_CACHED_GRAPH_EXECS", 1, 64),
                                           ("MGPU_CACHED_ALLOCATOR_HEADROOM", 0, 100),
                                           ("MGPU_CACHED_TRACE_LIMIT", 0, 1 << 28)])
def test_value_out_of_range_is_clamped_in_one_line(name, low, high):
    """The ends of the range are taken silently; a value beyond one is clamped with one line
    (MGPU_CACHED_GRAPH_EXECS=1000 used to be capped at 64 in silence)."""
    tries = [(str(low), str(low), "")] if low == 0 else \
        [(str(low), str(low), ""), (str(low - 1), str(low), "below the minimum")]
    tries += [(str(high), str(high), ""), (str(high + 1), str(high), "above the maximum"),
              ("184467440737095517", str(high), "above the maximum")]
    for value, used, side in tries:
        values, explicit, err = parse(**{name: value})
        assert values[name] == used and explicit[name], value
        assert err == ([f"mgpu-cached: {name}='{value}' is {side} {used}; using {used}"] if side
                       else []), value


@pytest.mark.parametrize("name,closest", [
    ("MGPU_CACHED_TRACEE", "MGPU_CACHED_TRACE"),
    ("MGPU_CACHED_DISABLED", "MGPU_CACHED_DISABLE"),
    ("MGPU_CACHED_STATS_FLIE", "MGPU_CACHED_STATS_FILE"),  # two letters swapped: one edit
    ("MGPU_CACHED_ALLOC_CACHE_BYTES", "MGPU_CACHED_ALLOCATOR_CACHE_BYTES"),
    ("MGPU_CACHED_graph", "MGPU_CACHED_GRAPH"),
    ("MGPU_CACHED_MANYLINUXX", "MGPU_CACHED_MANYLINUX"),  # read by build_runtime.py
])
def test_unknown_name_is_reported_with_the_closest_known_name(name, closest):
    values, explicit, err = parse(**{name: "1"})
    assert err == [f"mgpu-cached: unknown variable {name}; did you mean {closest}?"]
    assert values["MGPU_CACHED_DISABLE"] == "0"  # the misspelt one changes nothing


@pytest.mark.parametrize("name", ["MGPU_CACHED_XYZZY", "MGPU_CACHED_", "MGPU_CACHED_DEBUG"])
def test_unknown_name_far_from_every_known_one_is_reported_without_a_guess(name):
    err = parse(**{name: ""})[2]
    assert err == [f"mgpu-cached: unknown variable {name} (not one the library reads: "
                   "`mgpu-cached config` lists them)"]


def _names_the_project_sets():
    """Every MGPU_CACHED_* name the Python package, the build, CI, the tests and the benchmarks'
    scripts mention, less the library's error names (report.c) and the version macro."""
    files = [*(ROOT / "src" / "mgpu_cached").glob("*.py"), ROOT / "build_runtime.py",
             *(ROOT / ".ci").glob("*"), *(ROOT / "examples").rglob("*.py"),
             *[p for p in (ROOT / "tests").rglob("*")  # this file misspells names on purpose
               if p.suffix in (".py", ".sh") and p.name != "test_config.py"],
             *[p for p in (ROOT / "benchmarks").rglob("*")
               if p.suffix in (".py", ".sh") and "results" not in p.parts]]
    names = set()
    for f in files:
        if f.is_file():
            names |= set(re.findall(r"\bMGPU_CACHED_[A-Z0-9_]+", f.read_text(errors="replace")))
    errors = set(re.findall(r'"(MGPU_CACHED_[A-Z_]+)"',
                            (ROOT / "csrc" / "support" / "report.c").read_text()))
    return sorted(names - errors - {"MGPU_CACHED_VERSION"} - RETIRED)


# Switches that a run tried and the library no longer has: the scripts of those runs stay as
# their record (benchmarks/runs/h100_session_n29.sh, n30, n33).
RETIRED = {"MGPU_CACHED_POOL_POLL_AGE_NS", "MGPU_CACHED_ALLOCATOR_SPIN_US"}


def test_names_the_project_sets_are_known():
    """Variables that only the Python side, the build or a harness reads (MGPU_CACHED_MANYLINUX)
    are not reported; a misspelt one beside them is, once."""
    names = _names_the_project_sets()
    assert {"MGPU_CACHED_MANYLINUX", "MGPU_CACHED_CUDA_DRIVER",
            "MGPU_CACHED_CUSPARSELT"} <= set(names)
    env = {n: "" for n in names}
    env["MGPU_CACHED_TRACEE"] = "t.json"
    err = parse(**env)[2]
    assert err == ["mgpu-cached: unknown variable MGPU_CACHED_TRACEE; did you mean "
                   "MGPU_CACHED_TRACE?"]


def test_unknown_name_is_reported_once_per_process_and_not_again_in_a_fork():
    code = ("import os, mgpu_cached; rt = mgpu_cached.Runtime(); rt.config(); rt.config(); "
            "rt.stats()\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    rt.config(); rt.stats(); os._exit(0)\n"
            "os.waitpid(pid, 0)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MGPU_CACHED")}
    env["MGPU_CACHED_DISABLED"] = "1"
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       check=True)
    ours = [line for line in p.stderr.splitlines() if line.startswith("mgpu-cached:")]
    assert ours == ["mgpu-cached: unknown variable MGPU_CACHED_DISABLED; did you mean "
                    "MGPU_CACHED_DISABLE?"]


def _library_names():
    return [s.name for s in mgpu_cached.runtime().config()]


def test_help_env_lists_every_variable():
    out = subprocess.run([sys.executable, "-m", "mgpu_cached", "--help-env"], capture_output=True,
                         text=True, check=True).stdout
    listed = re.findall(r"^  ([A-Z][A-Z0-9_]+)$", out, re.M)
    assert listed == _library_names()
    assert "MGPU_CACHED_STREAM_CAP" in listed
