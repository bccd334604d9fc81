# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Generate the C checks of our own driver/runtime declarations against the real headers.

``generate(api, csrc)`` writes one C file that (1) includes our declarations (csrc/platform/cuda_api.h +
cuda_api_extra.h, or csrc/platform/hip_api.h) with every type name renamed so they can live beside the real
header, (2) includes the real header (``cuda.h`` / ``hip/hip_runtime_api.h``), then asserts at
compile time that every type of ours has the real type's size and alignment, every symbol-table
entry (expanded again, now with the real type names) has exactly the real prototype
(``__builtin_types_compatible_p``), and every constant of ours equals the real one. It compiles
only if everything matches; a mismatch names the entry in the error.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Dict, List, Tuple

CUDA_TYPES = ["CUresult", "CUdevice", "CUdeviceptr", "CUcontext", "CUmodule", "CUfunction",
              "CUlibrary", "CUkernel", "CUstream", "CUevent", "CUjit_option", "CUlibraryOption",
              "CUdevice_attribute", "CUfunction_attribute", "CUtensorMapDataType",
              "CUtensorMapInterleave", "CUtensorMapSwizzle", "CUtensorMapL2promotion",
              "CUtensorMapFloatOOBfill", "CUlaunchAttributeID", "cuuint32_t", "cuuint64_t",
              "CUtensorMap", "CUlaunchAttributeValue", "CUlaunchAttribute", "CUlaunchConfig",
              "CUgraph", "CUgraphNode", "CUgraphExec", "CUDA_KERNEL_NODE_PARAMS",
              "CUmemoryPool", "CUmemLocation", "CUmemPoolProps", "CUstreamCaptureMode",
              "CUstreamCaptureStatus"]
CUDA_TAGS = ["CUtensorMap_st", "CUlaunchAttributeValue_union", "CUlaunchAttribute_st",
             "CUlaunchConfig_st", "CUDA_KERNEL_NODE_PARAMS_v2_st", "CUmemPoolHandle_st",
             "CUmemLocation_st", "CUmemPoolProps_st"]
# struct members whose offsets must match: (type, member)
CUDA_MEMBERS = [("CUlaunchConfig", m) for m in
                ["gridDimX", "gridDimY", "gridDimZ", "blockDimX", "blockDimY", "blockDimZ",
                 "sharedMemBytes", "hStream", "attrs", "numAttrs"]] + [
                ("CUlaunchAttribute", "id"), ("CUlaunchAttribute", "value")] + [
                ("CUDA_KERNEL_NODE_PARAMS", m) for m in
                ["func", "gridDimX", "gridDimY", "gridDimZ", "blockDimX", "blockDimY", "blockDimZ",
                 "sharedMemBytes", "kernelParams", "extra", "kern", "ctx"]]
HIP_TYPES = ["hipError_t", "hipDeviceAttribute_t", "hipMemcpyKind", "hipDeviceptr_t",
             "hipModule_t", "hipFunction_t", "hipStream_t", "hipEvent_t"]
# HIP error codes the CUDA-shaped core tests must have CUDA's values (backend_hip.c passes them on)
HIP_SAME_AS_CUDA = [("hipSuccess", "CUDA_SUCCESS"), ("hipErrorInvalidValue", "CUDA_ERROR_INVALID_VALUE"),
                    ("hipErrorNotInitialized", "CUDA_ERROR_NOT_INITIALIZED"),
                    ("hipErrorDeinitialized", "CUDA_ERROR_DEINITIALIZED"),
                    ("hipErrorNoDevice", "CUDA_ERROR_NO_DEVICE"),
                    ("hipErrorInvalidDevice", "CUDA_ERROR_INVALID_DEVICE"),
                    ("hipErrorInvalidImage", "CUDA_ERROR_INVALID_IMAGE"),
                    ("hipErrorInvalidContext", "CUDA_ERROR_INVALID_CONTEXT"),
                    ("hipErrorInvalidHandle", "CUDA_ERROR_INVALID_HANDLE"),
                    ("hipErrorNotFound", "CUDA_ERROR_NOT_FOUND"),
                    ("hipErrorNotReady", "CUDA_ERROR_NOT_READY"),
                    ("hipErrorNotSupported", "CUDA_ERROR_NOT_SUPPORTED"),
                    ("hipEventDisableTiming", "CU_EVENT_DISABLE_TIMING"),
                    ("hipMemAttachGlobal", "CU_MEM_ATTACH_GLOBAL")]


def table_entries(cc: str, include_dir: Path, header: str, table: str, nargs: int,
                  flags: List[str]) -> List[Tuple[str, str]]:
    """(exported name, 'since' value) of every entry of an X-macro table, via the preprocessor."""
    params = ", ".join(f"a{i}" for i in range(nargs))
    name_arg = "a1" if table.startswith("MC_CUDA") else "a0"
    since = f"a{nargs - 1}" if table == "MC_HIP_SYMBOLS" else "0"
    src = (f'#include "{header}"\n#define L({params}) @@ {name_arg} {since} @@\n{table}(L)\n')
    out = subprocess.run([cc, "-E", "-P", "-I", str(include_dir), *flags, "-"], input=src,
                         capture_output=True, text=True, check=True).stdout
    return [(m.group(1), m.group(2)) for m in re.finditer(r"@@ (\w+) ([\w\s()*+]+?) @@", out)]


def constants(header_text: str, prefix: str) -> Dict[str, str]:
    """Our constants: {our macro: the real name} (the real name is ours without the prefix)."""
    found = re.findall(rf"#define ({prefix}(\w+)) ", header_text)
    return {ours: real for ours, real in found if not re.fullmatch(r"V\d+", real)}


def hip_version(cc: str, flags: List[str]) -> int:
    src = "#include <hip/hip_version.h>\nHIP_VERSION\n"
    out = subprocess.run([cc, "-E", "-P", *flags, "-"], input=src, capture_output=True,
                         text=True, check=True).stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"[\d\s()*+]+", out), out
    return int(eval(out))  # digits, spaces, + * ( ) only


def generate(api: str, csrc: Path, out_dir: Path, cc: str, flags: List[str]) -> Tuple[Path, List[str]]:
    """Write the checking C file for api 'cuda' or 'hip' (headers taken from csrc). Returns the
    file and the entries that the installed header does not declare (not checked)."""
    lines = ["/* generated by tests/conformance/generate.py */", "#include <stddef.h>"]
    skipped: List[str] = []
    if api == "cuda":
        renames = CUDA_TYPES + CUDA_TAGS
        lines += [f"#define {t} own_{t}" for t in renames]
        lines += ['#include "platform/cuda_api.h"', '#include "platform/cuda_api_extra.h"']
        lines += [f"#undef {t}" for t in renames]
        lines += ["#include <cuda.h>"]
        lines += [f'_Static_assert(sizeof(own_{t}) == sizeof({t}) && _Alignof(own_{t}) == '
                  f'_Alignof({t}), "type {t} differs from the real header");' for t in CUDA_TYPES]
        lines += [f'_Static_assert(offsetof(own_{t}, {m}) == offsetof({t}, {m}), '
                  f'"member {t}.{m} differs from the real header");' for t, m in CUDA_MEMBERS]
        lines += ["#define SAME(field, name, ret, params, args, req) _Static_assert("
                  "__builtin_types_compatible_p(__typeof__(&name), ret(*) params), "
                  "\"prototype of \" #name \" differs from the real header\");",
                  "MC_CUDA_SYMBOLS(SAME)", "MC_CUDA_EXTRA_SYMBOLS(SAME)"]
        consts = constants((csrc / "platform" / "cuda_api.h").read_text(), "MC_")
    else:
        lines += [f"#define {t} own_{t}" for t in HIP_TYPES]
        lines += ['#include "platform/hip_api.h"', '#include "platform/cuda_api.h"']
        lines += [f"#undef {t}" for t in HIP_TYPES]
        lines += ["#include <hip/hip_runtime_api.h>"]
        lines += [f'_Static_assert(sizeof(own_{t}) == sizeof({t}) && _Alignof(own_{t}) == '
                  f'_Alignof({t}), "type {t} differs from the real header");' for t in HIP_TYPES]
        version = hip_version(cc, flags)
        entries = table_entries(cc, csrc, "platform/hip_api.h", "MC_HIP_SYMBOLS", 6, flags)
        assert entries, "no entries found in MC_HIP_SYMBOLS"
        lines += ["#define SAME(name, ret, params, args, req, since) _Static_assert("
                  "__builtin_types_compatible_p(__typeof__(&name), ret(*) params), "
                  "\"prototype of \" #name \" differs from the real header\");"]
        skipped = [n for n, since in entries if int(eval(since)) > version]
        # expand the table keeping only the entries the installed header declares
        lines += ["#define PICK(name, ret, params, args, req, since) "
                  "PICK_##name(name, ret, params, args, req, since)"]
        lines += [f"#define PICK_{n}(...)" for n, _ in entries if n in skipped]
        lines += [f"#define PICK_{n}(...) SAME(__VA_ARGS__)" for n, _ in entries if n not in skipped]
        lines += ["MC_HIP_SYMBOLS(PICK)"]
        lines += [f'_Static_assert(MC_HIP_{h} == MC_{c}, "MC_HIP_{h} is not CUDA\'s {c}");'
                  for h, c in HIP_SAME_AS_CUDA]
        consts = constants((csrc / "platform" / "hip_api.h").read_text(), "MC_HIP_")
    lines += [f'_Static_assert(({ours}) == ({real}), "constant {ours} differs from {real} in the '
              f'real header");' for ours, real in consts.items()]
    path = out_dir / f"check_{api}.c"
    path.write_text("\n".join(lines) + "\n")
    return path, skipped
