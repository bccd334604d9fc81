# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The front page and the manual stay usable: README.md is at most 200 lines, every relative link in
README.md, docs/*.md and benchmarks/results/README.md resolves to a file or folder, no picture points
into a folder the sdist leaves out (MANIFEST.in's `prune` lines), the pages name every configuration
variable the library knows and no other, and no trace JSON over 100 KB is committed under
benchmarks/results/."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import mgpu_cached

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"(!?)\[[^\]]*\]\(([^)\s]+)\)")
README_MAX_LINES = 200
TRACE_JSON_MAX_BYTES = 100 * 1024


def _pruned() -> list[str]:
    """Folders MANIFEST.in leaves out of the sdist."""
    lines = (ROOT / "MANIFEST.in").read_text().splitlines()
    return [ln.split()[1].rstrip("/") for ln in lines if ln.startswith("prune ")]


def _pages() -> list[Path]:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    index = ROOT / "benchmarks" / "results" / "README.md"
    return pages + [index] if index.exists() else pages   # the sdist has no results/


def _links(page: Path):
    """(is_image, target) of every relative link of a page, code spans and blocks left out."""
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    for bang, target in LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue                                       # absolute URL or in-page anchor
        yield bang == "!", target.split("#", 1)[0]


def test_readme_is_a_front_page():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_docs_index_lists_every_page():
    index = (ROOT / "docs" / "README.md").read_text()
    missing = [p.name for p in (ROOT / "docs").glob("*.md")
               if p.name != "README.md" and f"]({p.name})" not in index]
    assert missing == []


def test_every_relative_link_resolves():
    pruned = _pruned()
    broken = []
    for page in _pages():
        for _, target in _links(page):
            path = (page.parent / target).resolve()
            rel = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
            if any(rel == p or rel.startswith(p + "/") for p in pruned if not (ROOT / p).exists()):
                continue                                   # unpacked sdist: the folder is left out
            if not path.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []


def test_no_picture_points_into_a_folder_the_sdist_leaves_out():
    pruned = _pruned()
    bad = []
    for page in _pages():
        if page.is_relative_to(ROOT / "benchmarks"):
            continue                                       # not in the sdist itself
        for is_image, target in _links(page):
            rel = (page.parent / target).resolve().relative_to(ROOT).as_posix()
            if is_image and any(rel == p or rel.startswith(p + "/") for p in pruned):
                bad.append(f"{page.relative_to(ROOT)}: {target}")
    assert bad == []


def test_pages_name_exactly_the_library_variables():
    """Every variable the library knows is explained somewhere; no page names an unknown one."""
    known = {s.name for s in mgpu_cached.runtime().config()}
    text = "\n".join(p.read_text() for p in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
    named = set(re.findall(r"\bMGPU_CACHED_[A-Z0-9_]*[A-Z0-9]\b", text))
    assert sorted(known - named - {"MLIR_CUDA_DEBUG", "NVTX_INJECTION64_PATH"}) == []
    assert "MLIR_CUDA_DEBUG" in text and "NVTX_INJECTION64_PATH" in text
    # besides the library's variables, pages may name its error codes and the build's variables
    errors = {m for c in (ROOT / "csrc").rglob("*.c")
              for m in re.findall(r'return "(MGPU_CACHED_[A-Z_]+)";', c.read_text())}
    build = set(re.findall(r"MGPU_CACHED_[A-Z_]+", (ROOT / "build_runtime.py").read_text()))
    assert "MGPU_CACHED_STALE_HANDLE" in errors
    assert sorted(named - known - errors - build) == []


def test_no_large_trace_json_committed_under_results():
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout")
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "benchmarks/results"],
                           capture_output=True, text=True, check=True).stdout.split()
    big = [f for f in files if f.endswith(".json") and (ROOT / f).exists()
           and (ROOT / f).stat().st_size > TRACE_JSON_MAX_BYTES]
    assert big == [], "trace JSONs over 100 KB stay out of the tree"
