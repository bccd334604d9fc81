# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The shape of csrc/: layers that depend downward only, and no cycle between files (issue 20).

The layers, top to bottom, are listed in ``csrc/LAYERS`` (the one place; ``csrc/README.md`` says
what each holds). A file in ``csrc/LAYER/`` may include headers of its own layer and of the layers
below it (``#include "platform/driver.h"``, compiled with ``-Icsrc``) and the public headers in
``csrc/include/``, which include nothing of the layers. Two checks:

* includes: every ``#include "..."`` line names a known folder and an existing file, none reaches
  a higher layer, and no two units (a ``.c`` file and its ``.h`` count as one unit) include each
  other in a cycle;
* symbols: each ``.c`` is compiled as ``build_runtime.py`` compiles it and ``nm`` lists what its
  object defines and uses; no object uses a symbol defined in a higher layer (a prototype declared
  by hand, or a function pointer taken, would escape the include check), and no units call each
  other in a cycle.

Run as a script (``python tests/test_layers.py``) it prints every problem it finds.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
CSRC = ROOT / "csrc"
PUBLIC = "include"  # public headers: usable from every layer
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')

Graph = Dict[str, Set[str]]


def read_layers(csrc: Path = CSRC) -> List[str]:
    """The layer names of ``csrc/LAYERS``, top to bottom (blanks and ``#`` comments skipped)."""
    names = []
    for line in (csrc / "LAYERS").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.append(line)
    return names


def unit(rel: str) -> str:
    """The unit of a path relative to csrc/: ``platform/driver.c`` and ``.h`` are one unit."""
    return rel.rsplit(".", 1)[0]


def layer_of(rel: str) -> Optional[str]:
    """The folder of a path relative to csrc/ (None for a file directly in csrc/)."""
    return rel.split("/", 1)[0] if "/" in rel else None


# csrc/'s top level: the flat view for builds that compile csrc/*.c (review 2's run.sh), the layer
# folders' code again: all.c includes every layer .c but streams/pool.c, which pool.c links to.
FLAT_VIEW = {"all.c": None, "pool.c": "streams/pool.c"}


def sources(csrc: Path, suffixes: Sequence[str] = (".c", ".h")) -> List[str]:
    """The C files of csrc/'s layers, as paths relative to it (the flat view left out)."""
    return sorted(p.relative_to(csrc).as_posix() for p in csrc.rglob("*")
                  if p.is_file() and p.suffix in suffixes
                  and p.relative_to(csrc).as_posix() not in FLAT_VIEW)


def find_cycles(graph: Graph) -> List[Tuple[List[str], List[str]]]:
    """The knots of ``graph``: for each strongly connected component of two or more nodes, its
    members and one cycle through its first member, as a closed path ``[a, b, ..., a]``."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    components: List[List[str]] = []

    def connect(v: str) -> None:  # Tarjan; the graphs are small (tens of nodes)
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                components.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    knots = []
    for comp in components:  # breadth first from the first member back to it, inside the knot
        members, start = set(comp), comp[0]
        prev: Dict[str, str] = {}
        frontier, last = [start], None
        while last is None:
            nxt = []
            for v in frontier:
                if start in graph.get(v, ()):
                    last = v
                    break
                for w in sorted(graph.get(v, ()) & members):
                    if w not in prev and w != start:
                        prev[w] = v
                        nxt.append(w)
            frontier = nxt
        path = [start]
        v = last
        while v != start:
            path.append(v)
            v = prev[v]
        knots.append((comp, [start] + path[1:][::-1] + [start]))
    return knots


def cycle_problems(kind: str, graph: Graph) -> List[str]:
    """One line per knot of ``graph``: a cycle, and the other files caught in it."""
    lines = []
    for members, cycle in find_cycles(graph):
        others = sorted(set(members) - set(cycle))
        lines.append(f"{kind} cycle between files: " + " -> ".join(cycle) +
                     (f" (and through them: {', '.join(others)})" if others else ""))
    return lines


def _rank(layers: Sequence[str]) -> Dict[str, int]:
    return {name: i for i, name in enumerate(layers)}


def _edge_problem(rank: Dict[str, int], frm: str, to: str) -> Optional[str]:
    """Why a dependency of ``frm`` on ``to`` (paths or units under csrc/) breaks the layers."""
    lf, lt = layer_of(frm), layer_of(to)
    if lf == PUBLIC and lt != PUBLIC:
        return f"public header uses layer {lt}"
    if lt == PUBLIC or lf == lt:
        return None
    if rank[lt] < rank[lf]:
        return f"layer {lf} reaches up to layer {lt}"
    return None


# ---- the include check -------------------------------------------------------------------------

@dataclass(frozen=True)
class Include:
    file: str  # relative to csrc/
    line: int
    target: str  # as written between the quotes


def scan_includes(csrc: Path = CSRC) -> List[Include]:
    """Every ``#include "..."`` line of csrc/."""
    found = []
    for rel in sources(csrc):
        for n, text in enumerate((csrc / rel).read_text(errors="replace").splitlines(), 1):
            m = INCLUDE_RE.match(text)
            if m:
                found.append(Include(rel, n, m.group(1)))
    return found


def include_problems(csrc: Path = CSRC) -> List[str]:
    """What breaks the layers in csrc/'s include lines (empty when the shape holds)."""
    layers = read_layers(csrc)
    rank = _rank(layers)
    known = set(layers) | {PUBLIC}
    problems = []
    for rel in sources(csrc):
        if layer_of(rel) not in known:
            problems.append(f"csrc/{rel}: not in a layer folder (csrc/LAYERS: {', '.join(layers)}, "
                            f"or {PUBLIC}/)")
    stems: Dict[str, str] = {}
    for rel in sources(csrc, (".c",)):  # build_runtime.py names each object after its file alone
        stem = Path(rel).stem
        if stem in stems:
            problems.append(f"csrc/{rel}: same name as csrc/{stems[stem]} (the build names objects "
                            "by file name)")
        stems.setdefault(stem, rel)
    graph: Graph = {}
    for inc in scan_includes(csrc):
        where = f"csrc/{inc.file}:{inc.line}: #include \"{inc.target}\""
        if layer_of(inc.file) not in known:
            continue  # reported above
        if layer_of(inc.target) not in known:
            problems.append(f"{where}: unknown folder (name the layer: \"LAYER/file.h\")")
            continue
        if not (csrc / inc.target).is_file():
            problems.append(f"{where}: no such file in csrc/")
            continue
        why = _edge_problem(rank, inc.file, inc.target)
        if why:
            problems.append(f"{where}: {why}")
        a, b = unit(inc.file), unit(inc.target)
        if a != b:
            graph.setdefault(a, set()).add(b)
    problems += cycle_problems("include", graph)
    return problems


# ---- the symbol check --------------------------------------------------------------------------

def _build_runtime():
    spec = importlib.util.spec_from_file_location("_layers_br", ROOT / "build_runtime.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def _nm_symbols(nm: str, obj: Path) -> Tuple[Set[str], Set[str]]:
    """(global symbols defined, symbols used but undefined) of an object file."""
    out = subprocess.run([nm, "-P", str(obj)], check=True, stdout=subprocess.PIPE,
                         text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind in ("U", "w", "v"):
            undefined.add(name)
        elif kind.isupper():
            defined.add(name)
    return defined, undefined


def compile_objects(csrc: Path, out: Path) -> Dict[str, Path]:
    """Each .c of csrc/ compiled to an object as build_runtime.py compiles it: unit -> object."""
    br = _build_runtime()
    cc = br.compiler()
    flags = br.CFLAGS + ['-DMGPU_CACHED_VERSION="0"', f"-I{csrc}"]
    objects = {}
    for rel in sources(csrc, (".c",)):
        objects[unit(rel)] = out / (unit(rel).replace("/", "__") + ".o")

    def one(rel: str) -> None:
        subprocess.run(cc + flags + ["-c", str(csrc / rel), "-o", str(objects[unit(rel)])],
                       check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        list(pool.map(one, sources(csrc, (".c",))))
    return objects


def symbol_problems(csrc: Path, objects: Dict[str, Path], nm: str) -> List[str]:
    """What breaks the layers in the symbols the objects use: a use of a symbol defined in a higher
    layer, and a cycle of units that use each other's symbols."""
    rank = _rank(read_layers(csrc))
    owner: Dict[str, str] = {}
    uses: Dict[str, Set[str]] = {}
    for u, obj in sorted(objects.items()):
        defined, undefined = _nm_symbols(nm, obj)
        for name in defined:
            owner.setdefault(name, u)
        uses[u] = undefined
    problems = []
    graph: Graph = {}
    for u, names in sorted(uses.items()):
        for name in sorted(names):
            v = owner.get(name)
            if v is None or v == u:
                continue  # the C library, libdl, the driver's (dlopen'd), or its own
            graph.setdefault(u, set()).add(v)
            if layer_of(u) in rank and layer_of(v) in rank:
                why = _edge_problem(rank, u, v)
                if why:
                    problems.append(f"csrc/{u}.c uses {name} of csrc/{v}.c: {why}")
    problems += cycle_problems("call", graph)
    return problems


# ---- the tests ---------------------------------------------------------------------------------

def test_layers_list_and_readme_agree():
    """csrc/LAYERS names each folder of csrc/ once, and csrc/README.md describes them in order."""
    layers = read_layers()
    assert len(layers) == len(set(layers))
    folders = {p.name for p in CSRC.iterdir() if p.is_dir()}
    assert folders == set(layers) | {PUBLIC}
    readme = (CSRC / "README.md").read_text()
    positions = [readme.find(f"`{name}/`") for name in layers]
    assert all(p >= 0 for p in positions), dict(zip(layers, positions))
    assert positions == sorted(positions), "csrc/README.md lists the layers in another order"


def test_includes_point_down():
    assert include_problems() == []


def _copy_csrc(tmp_path: Path) -> Path:
    copy = tmp_path / "csrc"
    shutil.copytree(CSRC, copy)
    return copy


def _plant(path: Path, line: str) -> None:
    text = path.read_text().splitlines(keepends=True)
    at = next(i for i, t in enumerate(text) if INCLUDE_RE.match(t))
    text.insert(at, line + "\n")
    path.write_text("".join(text))


def test_include_check_catches_an_upward_include(tmp_path):
    csrc = _copy_csrc(tmp_path)
    _plant(csrc / "support" / "stats.c", '#include "memory/allocator.h"')
    problems = include_problems(csrc)
    assert any(p.startswith("csrc/support/stats.c:") and "allocator.h" in p and
               "layer support reaches up to layer memory" in p for p in problems), problems


def test_include_check_catches_unknown_folders_and_cycles(tmp_path):
    csrc = _copy_csrc(tmp_path)
    _plant(csrc / "platform" / "driver.c", '#include "driver.h"')
    _plant(csrc / "support" / "blob.c", '#include "support/rodata.h"')
    _plant(csrc / "support" / "rodata.c", '#include "support/blob.h"')
    (csrc / "misc").mkdir()
    (csrc / "misc" / "x.h").write_text("/* x.h */\n")
    (csrc / "platform" / "stats.c").write_text("/* a second stats.c */\n")
    problems = include_problems(csrc)
    assert any('platform/driver.c' in p and 'unknown folder' in p for p in problems), problems
    assert any(p.startswith("csrc/misc/x.h: not in a layer folder") for p in problems), problems
    assert any(p.startswith("include cycle") and "support/blob" in p and "support/rodata" in p
               for p in problems), problems
    assert any("same name as" in p and "csrc/platform/stats.c" in p and "csrc/support/stats.c" in p
               for p in problems), problems


@pytest.fixture(scope="module")
def toolchain() -> str:
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("no nm to list the objects' symbols")
    try:
        _build_runtime().compiler()
    except RuntimeError:
        pytest.skip("no C compiler")
    return nm


def flat_view_problems(csrc: Path = CSRC) -> List[str]:
    """What makes csrc/*.c differ from the layer folders' files: all.c must include each layer .c
    once (but the one a top-level link stands for), each link must point at its layer file, and
    nothing else may sit at the top level."""
    problems = []
    top = sorted(p.name for p in csrc.glob("*.c"))
    if top != sorted(FLAT_VIEW):
        problems.append(f"csrc/*.c is {top}, expected {sorted(FLAT_VIEW)}")
    linked = {target for target in FLAT_VIEW.values() if target}
    for name, target in FLAT_VIEW.items():  # a link in the repository, a copy in an sdist
        if target and (csrc / name).read_bytes() != (csrc / target).read_bytes():
            problems.append(f"csrc/{name} is not {target}")
    included = [m.group(1) for m in map(INCLUDE_RE.match, (csrc / "all.c").read_text().splitlines())
                if m]
    want = sorted(set(sources(csrc, (".c",))) - linked)
    if sorted(included) != want:
        missing = sorted(set(want) - set(included))
        extra = sorted(set(included) - set(want))
        twice = sorted({i for i in included if included.count(i) > 1})
        problems.append(f"csrc/all.c: missing {missing}, not a layer .c {extra}, twice {twice}")
    return problems


def test_flat_view_is_the_layers():
    assert flat_view_problems() == []


def test_flat_view_check_catches_a_missing_file(tmp_path):
    copy = tmp_path / "csrc"
    shutil.copytree(CSRC, copy, symlinks=True)
    (copy / "trace" / "trace_new.c").write_text("int mc_trace_new(void) { return 0; }\n")
    assert flat_view_problems(copy) == [
        "csrc/all.c: missing ['trace/trace_new.c'], not a layer .c [], twice []"]


def test_flat_view_builds_the_same_library(toolchain, tmp_path):
    """`cc -Icsrc csrc/*.c -shared` (review 2's run.sh) links without a warning, into a library
    that exports what the package's library exports."""
    import mgpu_cached
    br = _build_runtime()
    lib = tmp_path / "libflat.so"
    r = subprocess.run(br.compiler() + br.CFLAGS + ['-DMGPU_CACHED_VERSION="0"', f"-I{CSRC}",
                       *map(str, sorted(CSRC.glob("*.c"))), *br.LDFLAGS, "-o", str(lib),
                       *br.LIBS], capture_output=True, text=True)
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr

    def exported(path) -> Set[str]:
        out = subprocess.run([toolchain, "-D", "--defined-only", "-P", str(path)], check=True,
                             capture_output=True, text=True).stdout
        return {line.split()[0] for line in out.splitlines() if line.strip()}
    flat, package = exported(lib), exported(mgpu_cached.library_path())
    assert len(package) > 50 and flat == package, (sorted(flat - package), sorted(package - flat))


def test_symbols_point_down(toolchain, tmp_path):
    objects = compile_objects(CSRC, tmp_path)
    assert symbol_problems(CSRC, objects, toolchain) == []


PLANTS = {  # a prototype written in a .c (no include), and what the symbol check must say
    "upward": ("support/report.c", "int mc_alloc_release_all(unsigned long *n);\n"
               "int mc_layers_planted(void) { return mc_alloc_release_all(0); }\n",
               "csrc/support/report.c uses mc_alloc_release_all of csrc/memory/allocator.c: "
               "layer support reaches up to layer memory"),
    "cycle": ("platform/driver.c", "int mc_device_count(void);\n"
              "int mc_layers_planted(void) { return mc_device_count(); }\n",
              "call cycle between files: platform/context -> platform/driver -> platform/context"),
}


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_symbol_check_catches_hand_declared_calls(toolchain, tmp_path, plant):
    """A call into a higher layer, or into a file of the same layer that calls this one, made
    through a prototype written by hand."""
    rel, code, expected = PLANTS[plant]
    csrc = _copy_csrc(tmp_path)
    (csrc / rel).write_text((csrc / rel).read_text() + "\n" + code)
    (tmp_path / "obj").mkdir()
    problems = symbol_problems(csrc, compile_objects(csrc, tmp_path / "obj"), toolchain)
    assert any(p.startswith(expected) for p in problems), problems


if __name__ == "__main__":
    import tempfile

    found = include_problems()
    nm_path = shutil.which("nm")
    if nm_path:
        with tempfile.TemporaryDirectory() as tmp:
            found += symbol_problems(CSRC, compile_objects(CSRC, Path(tmp)), nm_path)
    print("\n".join(found) or "csrc/: the layers hold")
    sys.exit(1 if found else 0)
