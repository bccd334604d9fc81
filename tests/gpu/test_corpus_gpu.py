# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The conformance corpus (tests/corpus/) on a GPU: every program, compiled by MLIR 19 and 22, runs
in cached and in stock mode; each run prints exactly the expected values (expected/<name>.txt,
lines compared sorted: device printf order is not defined), nothing on stderr, and the two modes
agree; where a device assert fires (assert_fail), both modes print the driver's assertion message
for the one failing thread, report CUDA_ERROR_ASSERT first and exit alike. The CPU half is
tests/test_corpus.py; tests/corpus/gpu_run.sh runs both and the same checks as a script."""

import os
import sys

import pytest

import mgpu_cached
from conftest import CC, ROOT
from gpu_support import cu, gpu, ok  # noqa: F401 (fixtures)

sys.path.insert(0, str(ROOT / "tests" / "corpus"))
import corpus  # noqa: E402

if cu is None:
    pytest.skip("GPU tests need cuda-python (pip install cuda-python) and an NVIDIA GPU",
                allow_module_level=True)

CASES = [(n, v) for n in corpus.PROGRAMS for v in corpus.LLVMS]


@pytest.fixture(scope="module")
def capability(gpu):
    dev = ok(cu.cuDeviceGet(0))
    attr = cu.CUdevice_attribute
    return (ok(cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)),
            ok(cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)))


@pytest.mark.parametrize("name,llvm", CASES, ids=[f"{n}-llvm{v}" for n, v in CASES])
def test_corpus_program_on_gpu(gpu, capability, tmp_path, name, llvm):
    if CC is None:
        pytest.skip("no C compiler")
    if capability != (9, 0):  # sm_90 cubins, and sm_90a ones for tma and cluster
        pytest.skip(f"the corpus is compiled for sm_90/sm_90a; this GPU is sm_{capability[0]}"
                    f"{capability[1]}")
    exe = corpus.build(name, llvm, tmp_path, mgpu_cached.ldflags_list(), CC)
    env = dict(os.environ)
    env.pop("MGPU_CACHED_CUDA_DRIVER", None)  # the real driver
    runs = {m: corpus.run(exe, m, env, timeout=30) for m in corpus.MODES}
    problems = {m: corpus.check_expected(name, r, m) for m, r in runs.items()}
    assert problems == {"cached": [], "stock": []}, {m: (r.stdout, r.stderr)
                                                    for m, r in runs.items()}
    assert corpus.compare_modes(name, runs["cached"], runs["stock"]) == []
