# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Our own declarations of CUDA driver and HIP runtime entry points (csrc/platform/cuda_api.h,
csrc/platform/cuda_api_extra.h, csrc/platform/hip_api.h) against the real headers, where those are installed: the
CUDA toolkit's cuda.h and hip/hip_runtime_api.h (Debian: libamdhip64-dev). The generated C file
(tests/conformance/generate.py) only compiles if every prototype, type size/alignment, struct
member offset and constant matches; the planted-mismatch tests show that it fails otherwise."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CC, ROOT, cuda_include

sys.path.insert(0, str(ROOT / "tests" / "conformance"))
from generate import generate  # noqa: E402

CSRC = ROOT / "csrc"


def hip_include():
    for d in [os.environ.get("ROCM_PATH", ""), "/opt/rocm", "/usr"]:
        if d and (Path(d) / "include" / "hip" / "hip_runtime_api.h").is_file():
            return Path(d) / "include"
    return None


def flags(api):
    if CC is None:
        pytest.skip("no C compiler")
    if api == "cuda":
        inc = cuda_include()
        if inc is None:
            pytest.skip("cuda.h is not installed (CUDA toolkit; set CUDA_PATH): nothing to check "
                        "against")
        return [f"-I{inc}"]
    inc = hip_include()
    if inc is None:
        pytest.skip("hip/hip_runtime_api.h is not installed (Debian: apt-get install "
                    "libamdhip64-dev; or set ROCM_PATH): nothing to check against")
    return [f"-I{inc}", "-D__HIP_PLATFORM_AMD__"]


def check(api, csrc, tmp_path):
    fl = flags(api)
    path, skipped = generate(api, csrc, tmp_path, CC, fl)
    p = subprocess.run([CC, "-std=c11", "-fsyntax-only", f"-I{csrc}", *fl, str(path)],
                       capture_output=True, text=True)
    return p.returncode, p.stderr, skipped


def test_cuda_declarations_match_cuda_h(tmp_path):
    rc, err, _ = check("cuda", CSRC, tmp_path)
    assert rc == 0, err


def test_hip_declarations_match_hip_runtime_api_h(tmp_path):
    rc, err, skipped = check("hip", CSRC, tmp_path)
    assert rc == 0, err
    # entries newer than the installed header are not checked; only these may be
    assert set(skipped) <= {"hipModuleLaunchCooperativeKernel"}, skipped


PLANTS = [
    ("hip", "platform/hip_api.h", "(hipStream_t * stream, unsigned int flags), (stream,",
     "(hipStream_t * stream, int flags), (stream,", "prototype of hipStreamCreateWithFlags"),
    ("hip", "platform/hip_api.h", "#define MC_HIP_hipErrorNotReady 600", "#define MC_HIP_hipErrorNotReady 601",
     "constant MC_HIP_hipErrorNotReady"),
    ("hip", "platform/hip_api.h", "typedef void *hipDeviceptr_t;", "typedef unsigned hipDeviceptr_t;",
     "type hipDeviceptr_t"),
    ("cuda", "platform/cuda_api.h", "(CUdeviceptr dstDevice, unsigned short us,",
     "(CUdeviceptr dstDevice, unsigned int us,", "prototype of cuMemsetD16Async"),
    ("cuda", "platform/cuda_api.h", "#define MC_CUDA_ERROR_NOT_READY 600",
     "#define MC_CUDA_ERROR_NOT_READY 601", "constant MC_CUDA_ERROR_NOT_READY"),
    ("cuda", "platform/cuda_api.h", "  unsigned int sharedMemBytes;\n  CUstream hStream;",
     "  CUstream hStream;\n  unsigned int sharedMemBytes;", "member CUlaunchConfig.hStream"),
    ("cuda", "platform/cuda_api_extra.h", "(CUdeviceptr * pdptr, void", "(CUdeviceptr * pdptr, const void",
     "prototype of cuMemHostGetDevicePointer_v2"),
]


@pytest.mark.parametrize("api,header,old,new,message", PLANTS,
                         ids=[p[4].split()[-1] for p in PLANTS])
def test_checker_rejects_a_planted_mismatch(tmp_path, api, header, old, new, message):
    csrc = tmp_path / "csrc"
    shutil.copytree(CSRC, csrc)
    text = (csrc / header).read_text()
    assert text.count(old) == 1, f"plant site not found in {header}: {old!r}"
    (csrc / header).write_text(text.replace(old, new))
    rc, err, _ = check(api, csrc, tmp_path)
    assert rc != 0 and message in err, err
