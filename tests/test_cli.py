# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""`mgpu-cached stats -- COMMAND` in scripts: every process counted, the command's exit status
returned, one-line errors; the CLI through `python -m mgpu_cached` (no dependence on PATH)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import mgpu_cached
from conftest import CC

STREAM_PROGRAM = (
    "void *mgpuStreamCreate(void); void mgpuStreamDestroy(void *);\n"
    "int main(void) { for (int i = 0; i < 5; ++i) mgpuStreamDestroy(mgpuStreamCreate());"
    " return 0; }\n")


def cli(*args, env=None, **kw):
    return subprocess.run([sys.executable, "-m", "mgpu_cached", *args], env=env,
                          capture_output=True, text=True, **kw)


@pytest.fixture
def stock_named_program(tmp_path):
    """A program linked against the package's stock-named copy (libmlir_cuda_runtime.so), as an
    MLIR build that names the stock library is: with `stats` it has two copies of the library
    loaded, the preloaded one serving every call."""
    if CC is None:
        pytest.skip("no C compiler")
    (tmp_path / "prog.c").write_text(STREAM_PROGRAM)
    exe = tmp_path / "prog"
    d = str(mgpu_cached.stock_libdir())
    subprocess.run([CC, "-o", str(exe), str(tmp_path / "prog.c"), f"-L{d}", "-lmlir_cuda_runtime",
                    f"-Wl,-rpath,{d}"], check=True)
    return exe


def fake_env(fake_driver_build):
    env = dict(os.environ, MGPU_CACHED_CUDA_DRIVER=str(fake_driver_build))
    env.pop("MGPU_CACHED_DISABLE", None)
    return env


def test_stats_sums_every_process_of_a_wrapper(stock_named_program, fake_driver_build):
    """bash runs the program twice and exits 3: the counters of both runs are summed (bash loads
    the library too, and each program has a second, idle copy: their files count zero), and the
    exit status is bash's."""
    if not shutil.which("bash"):
        pytest.skip("bash is not installed")
    p = cli("stats", "--json", "--", "bash", "-c", f"{stock_named_program}; {stock_named_program};"
            " exit 3", env=fake_env(fake_driver_build))
    assert p.returncode == 3, p.stderr
    stats = json.loads(p.stdout)
    assert stats["stream_creates"] == 10 and stats["stream_destroys"] == 10
    assert stats["live_streams"] == 0
    assert p.stderr == "mgpu-cached: 'bash' exited with status 3\n"
    text = cli("stats", "--", "bash", "-c", f"{stock_named_program}; {stock_named_program}; true",
               env=fake_env(fake_driver_build))
    assert text.returncode == 0 and text.stderr == ""
    lines = text.stdout.splitlines()
    assert lines[0] == "backend  cuda"
    assert lines[1] == "processes  3 (counters summed over them)"
    assert any(line.split()[:2] == ["stream_creates", "10"] for line in lines)


def test_stats_of_a_command_that_fails_returns_its_status(stock_named_program, fake_driver_build):
    p = cli("stats", "--", sys.executable, "-c", "import sys; sys.exit(7)",
            env=fake_env(fake_driver_build))
    assert p.returncode == 7
    assert "exited with status 7" in p.stderr and "Traceback" not in p.stderr


def test_stats_missing_command_is_one_line():
    p = cli("stats", "--", "mgpu-cached-no-such-command")
    assert p.returncode == 127 and p.stdout == ""
    assert p.stderr == "mgpu-cached: mgpu-cached-no-such-command: command not found\n"


def test_stats_when_no_process_loaded_the_library():
    """`env -u LD_PRELOAD true`: env loads the library but replaces itself (exec) before exit, and
    true runs without it: nothing was counted, and the command says so."""
    p = cli("stats", "--", "env", "-u", "LD_PRELOAD", "true")
    assert p.returncode == 0 and p.stdout == ""
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("mgpu-cached: no process of 'env' loaded "
                                                   "libmgpu_cached.so")


def test_closed_pipe_is_one_line(stock_named_program, fake_driver_build):
    """The reader of the output went away: one line on stderr, no traceback."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        for args in (["--help"], ["stats", "--", str(stock_named_program)]):
            p = subprocess.run([sys.executable, "-m", "mgpu_cached", *args], stdout=write_end,
                               stderr=subprocess.PIPE, text=True, env=fake_env(fake_driver_build))
            assert p.stderr == "mgpu-cached: output closed early (broken pipe)\n", p.stderr
            assert p.returncode == 141
    finally:
        os.close(write_end)


def test_version_everywhere():
    assert cli("--version").stdout == f"mgpu-cached {mgpu_cached.__version__}\n"
    for sub in ("stats", "config", "bench"):
        assert cli(sub, "--version").stdout == f"mgpu-cached {mgpu_cached.__version__}\n"


def test_config_subcommand_shows_values_in_use():
    env = dict(os.environ, MGPU_CACHED_STREAM_CAP="8", MGPU_CACHED_MODULE_CACHE="lots")
    p = cli("config", "--json", env=env, check=True)
    table = {s["name"]: s for s in json.loads(p.stdout)}
    assert table["MGPU_CACHED_STREAM_CAP"]["value"] == "8"
    assert table["MGPU_CACHED_STREAM_CAP"]["explicit"] is True
    assert table["MGPU_CACHED_MODULE_CACHE"]["value"] == "256"
    assert p.stderr == ("mgpu-cached: MGPU_CACHED_MODULE_CACHE='lots' is not a non-negative "
                        "decimal integer; using the default 256\n")


def test_a_missing_library_is_one_line(tmp_path):
    """The package without its build (what `pip install -e .` left before it built the library):
    every command says so in one line instead of printing paths to nothing or a traceback."""
    shutil.copytree(Path(mgpu_cached.__file__).parent, tmp_path / "mgpu_cached",
                    ignore=shutil.ignore_patterns("lib", "include", "__pycache__"))
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    for args in (["--ldflags"], ["--libdir"], [], ["stats"], ["stats", "--", "true"]):
        p = cli(*args, env=env)
        assert p.returncode == 1 and p.stdout == "", args
        assert p.stderr.count("\n") == 1 and "libmgpu_cached.so is missing" in p.stderr, p.stderr
        assert "Traceback" not in p.stderr
    helped = cli("--help", env=env)  # the help needs no library; the variables come from it
    assert helped.returncode == 0 and "--help-env" in helped.stdout and helped.stderr == ""
    env_help = cli("--help-env", env=env)
    assert env_help.returncode == 1 and env_help.stdout == ""
    assert env_help.stderr.count("\n") == 1 and "libmgpu_cached.so is missing" in env_help.stderr


def test_stats_of_a_command_killed_by_a_signal_returns_128_plus_the_signal():
    p = cli("stats", "--", "sh", "-c", "kill -TERM $$")
    assert p.returncode == 128 + 15 and "Traceback" not in p.stderr


def test_stats_counts_a_forked_child_once(tmp_path, fake_driver_build):
    """A process forks without exec: the child's file counts only what the child did, so the sum
    over the process tree counts the parent's streams once (3 + 2, not 3 + 5)."""
    script = tmp_path / "forker.py"
    script.write_text(
        "import ctypes, os, sys\n"
        "import mgpu_cached\n"
        "lib = ctypes.CDLL(str(mgpu_cached.library_path()))\n"
        "lib.mgpuStreamCreate.restype = ctypes.c_void_p\n"
        "lib.mgpuStreamDestroy.argtypes = [ctypes.c_void_p]\n"
        "def streams(n):\n"
        "    for _ in range(n): lib.mgpuStreamDestroy(lib.mgpuStreamCreate())\n"
        "streams(3)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    streams(2)\n"
        "    sys.exit(0)\n"
        "os.waitpid(pid, 0)\n")
    p = cli("stats", "--json", "--", sys.executable, str(script), env=fake_env(fake_driver_build))
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["stream_creates"] == 5


def test_fork_after_the_library_was_unloaded(tmp_path):
    """The library's fork handler leaves with the library: dlclose, then fork, and the child runs
    (a handler left behind would jump into unmapped memory in the child)."""
    copy = tmp_path / "libcopy.so"
    shutil.copy(mgpu_cached.library_path(), copy)
    code = ("import ctypes, _ctypes, os, sys\n"
            f"lib = ctypes.CDLL({str(copy)!r})\n"
            "lib.mgpu_cached_stats_count()\n"
            "_ctypes.dlclose(lib._handle)\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    os._exit(7)\n"
            "print(os.waitpid(pid, 0)[1])\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.strip() == str(7 << 8), (p.stdout, p.stderr)


# ---- help: short per command, the variables only where asked ------------------------------------

SUBCOMMANDS = ("stats", "config", "bench", "trace", "report")


def test_help_is_short_and_every_command_has_a_description():
    top = cli("--help")
    assert top.returncode == 0 and top.stderr == ""
    assert "MGPU_CACHED_" not in top.stdout and len(top.stdout.splitlines()) < 40
    for sub in SUBCOMMANDS:
        assert f"    {sub} " in top.stdout  # listed with its help line
        p = cli(sub, "--help")
        assert p.returncode == 0 and p.stderr == "", sub
        assert "MGPU_CACHED_STREAM_CAP" not in p.stdout, sub  # no variable dump
        assert len(p.stdout.splitlines()) < 30, sub
        # usage, a blank line, then a description paragraph before the arguments
        blocks = p.stdout.split("\n\n")
        assert blocks[0].startswith(f"usage: mgpu-cached {sub}"), sub
        assert not blocks[1].startswith(("options:", "positional arguments:")), sub
        assert len(blocks[1].split()) >= 10, (sub, blocks[1])


def test_help_env_lists_every_variable_the_library_reads():
    names = [s.name for s in mgpu_cached.runtime().config()]
    assert len(names) > 20
    for args in (["--help-env"], ["config", "--help-env"]):
        p = cli(*args)
        assert p.returncode == 0 and p.stderr == "", args
        listed = [l.strip() for l in p.stdout.splitlines()
                  if l.startswith("  ") and not l.startswith("   ")]
        assert listed == names, args
        assert all(len(l) <= 78 for l in p.stdout.splitlines()), args


# ---- stats of a program that crashes after loading the library ----------------------------------

CRASH_PROGRAM = (
    "#include <signal.h>\n"
    "void *mgpuStreamCreate(void); void mgpuStreamDestroy(void *);\n"
    "int main(void) { mgpuStreamDestroy(mgpuStreamCreate()); raise(SIGSEGV); return 0; }\n")


@pytest.fixture
def crashing_program(tmp_path):
    """Linked against the library (so it certainly loaded it), makes a call, then dies by
    SIGSEGV: the statistics file is written at exit, which never comes."""
    if CC is None:
        pytest.skip("no C compiler")
    (tmp_path / "crash.c").write_text(CRASH_PROGRAM)
    exe = tmp_path / "crash"
    subprocess.run([CC, "-o", str(exe), str(tmp_path / "crash.c"), *mgpu_cached.ldflags_list()],
                   check=True)
    return exe


def test_stats_of_a_program_that_crashed_after_loading_the_library(crashing_program,
                                                                   fake_driver_build):
    p = cli("stats", "--", str(crashing_program), env=fake_env(fake_driver_build))
    assert p.returncode == 128 + 11 and p.stdout == ""
    assert p.stderr == (f"mgpu-cached: '{crashing_program}' ended by signal SIGSEGV before "
                        "writing statistics (each process writes them when it exits): no "
                        "statistics\n")
    assert "loaded" not in p.stderr


def test_stats_when_a_child_crashed_and_the_parent_exited(crashing_program, fake_driver_build):
    """The shell's own file counts; the crashed child's counters are missing, and the shell's
    status (its report of the signal) says why."""
    p = cli("stats", "--json", "--", "sh", "-c", f"{crashing_program}",
            env=fake_env(fake_driver_build))
    assert p.returncode == 128 + 11
    assert "SIGSEGV" in p.stderr and "Traceback" not in p.stderr
