/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* cuda_api_extra.h - CUDA driver entry points used only by the ROCm-only exports (abi_rocm.c):
 * globals of a module and device pointers of registered host memory. A table of its own, in the
 * format of MC_CUDA_SYMBOLS (cuda_api.h), so that the main table stays untouched; all optional.
 * Checked against the real cuda.h by tests/conformance like the main table.
 */
#ifndef MGPU_CACHED_CUDA_API_EXTRA_H
#define MGPU_CACHED_CUDA_API_EXTRA_H

#include "platform/cuda_api.h"

#define MC_CUDA_EXTRA_SYMBOLS(X)                                                                   \
  X(cuModuleGetGlobal, cuModuleGetGlobal_v2, CUresult, (CUdeviceptr * dptr, size_t *bytes,         \
    CUmodule hmod, const char *name), (dptr, bytes, hmod, name), 0)                                \
  X(cuLibraryGetGlobal, cuLibraryGetGlobal, CUresult, (CUdeviceptr * dptr, size_t *bytes,          \
    CUlibrary library, const char *name), (dptr, bytes, library, name), 0)                         \
  X(cuMemHostGetDevicePointer, cuMemHostGetDevicePointer_v2, CUresult, (CUdeviceptr * pdptr, void  \
    *p, unsigned int Flags), (pdptr, p, Flags), 0)

#endif
