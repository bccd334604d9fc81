/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* hip_api.h - our own declarations of the HIP runtime API subset the HIP backend uses.
 *
 * Like cuda_api.h for CUDA: the library never includes <hip/hip_runtime_api.h>, builds without
 * ROCm and loads libamdhip64.so at run time. Types keep HIP's names; constants carry an MC_HIP_
 * prefix. tests/conformance/check_hip.c compiles this table against the real header (Debian's
 * libamdhip64-dev) and fails on any difference of prototype, type size or constant.
 *
 * MC_HIP_SYMBOLS(X) is the one symbol table:
 * X(name, return, (params), (argument names), required, first HIP version that declares it).
 * backend_hip.c resolves it with dlsym; tests/drivers/fakehip.c implements it.
 */
#ifndef MGPU_CACHED_HIP_API_H
#define MGPU_CACHED_HIP_API_H

#include <stddef.h>

typedef int hipError_t;              /* an enum in HIP: int-sized, values checked below */
typedef int hipDeviceAttribute_t;    /* enum */
typedef int hipMemcpyKind;           /* enum */
typedef void *hipDeviceptr_t;
typedef struct ihipModule_t *hipModule_t;
typedef struct ihipModuleSymbol_t *hipFunction_t;
typedef struct ihipStream_t *hipStream_t;
typedef struct ihipEvent_t *hipEvent_t;

/* Constants (values from hip_runtime_api.h / driver_types.h; checked by the conformance test).
 * The error codes the core inspects have the same values as CUDA's (checked there too), so a
 * hipError_t passes through the CUDA-shaped core unchanged and is named by hipGetErrorName. */
#define MC_HIP_hipSuccess 0
#define MC_HIP_hipErrorInvalidValue 1
#define MC_HIP_hipErrorOutOfMemory 2
#define MC_HIP_hipErrorNotInitialized 3
#define MC_HIP_hipErrorDeinitialized 4
#define MC_HIP_hipErrorNoDevice 100
#define MC_HIP_hipErrorInvalidDevice 101
#define MC_HIP_hipErrorInvalidImage 200
#define MC_HIP_hipErrorInvalidContext 201
#define MC_HIP_hipErrorInvalidHandle 400
#define MC_HIP_hipErrorNotFound 500
#define MC_HIP_hipErrorNotReady 600
#define MC_HIP_hipErrorNotSupported 801
#define MC_HIP_hipStreamDefault 0x0
#define MC_HIP_hipStreamNonBlocking 0x1
#define MC_HIP_hipEventDisableTiming 0x2
#define MC_HIP_hipMemAttachGlobal 0x1
#define MC_HIP_hipMemcpyDefault 4
#define MC_HIP_hipDeviceAttributeMaxSharedMemoryPerBlock 74
#define MC_HIP_hipDeviceAttributeSharedMemPerBlockOptin 75

/* HIP_VERSION of the first release whose header declares an entry (for the conformance test). */
#define MC_HIP_V5 50000000
#define MC_HIP_V6 60000000

#define MC_HIP_SYMBOLS(X)                                                                          \
  X(hipGetErrorName, const char *, (hipError_t hip_error), (hip_error), 1, MC_HIP_V5)              \
  X(hipInit, hipError_t, (unsigned int flags), (flags), 1, MC_HIP_V5)                              \
  X(hipDriverGetVersion, hipError_t, (int *driverVersion), (driverVersion), 1, MC_HIP_V5)          \
  X(hipGetDeviceCount, hipError_t, (int *count), (count), 1, MC_HIP_V5)                            \
  X(hipGetDevice, hipError_t, (int *deviceId), (deviceId), 1, MC_HIP_V5)                           \
  X(hipSetDevice, hipError_t, (int deviceId), (deviceId), 1, MC_HIP_V5)                            \
  X(hipDeviceGetAttribute, hipError_t, (int *pi, hipDeviceAttribute_t attr, int deviceId),        \
    (pi, attr, deviceId), 1, MC_HIP_V5)                                                            \
  X(hipModuleLoadData, hipError_t, (hipModule_t * module, const void *image), (module, image), 1,  \
    MC_HIP_V5)                                                                                     \
  X(hipModuleUnload, hipError_t, (hipModule_t module), (module), 1, MC_HIP_V5)                     \
  X(hipModuleGetFunction, hipError_t, (hipFunction_t * function, hipModule_t module, const char    \
    *kname), (function, module, kname), 1, MC_HIP_V5)                                              \
  X(hipModuleGetGlobal, hipError_t, (hipDeviceptr_t * dptr, size_t *bytes, hipModule_t hmod,       \
    const char *name), (dptr, bytes, hmod, name), 1, MC_HIP_V5)                                    \
  X(hipModuleLaunchKernel, hipError_t, (hipFunction_t f, unsigned int gridDimX, unsigned int       \
    gridDimY, unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int  \
    blockDimZ, unsigned int sharedMemBytes, hipStream_t stream, void **kernelParams, void          \
    **extra), (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,   \
    stream, kernelParams, extra), 1, MC_HIP_V5)                                                    \
  X(hipModuleLaunchCooperativeKernel, hipError_t, (hipFunction_t f, unsigned int gridDimX,         \
    unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,  \
    unsigned int blockDimZ, unsigned int sharedMemBytes, hipStream_t stream, void                  \
    **kernelParams), (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,            \
    sharedMemBytes, stream, kernelParams), 0, MC_HIP_V6)                                           \
  X(hipStreamCreate, hipError_t, (hipStream_t * stream), (stream), 1, MC_HIP_V5)                   \
  X(hipStreamCreateWithFlags, hipError_t, (hipStream_t * stream, unsigned int flags), (stream,     \
    flags), 1, MC_HIP_V5)                                                                          \
  X(hipStreamDestroy, hipError_t, (hipStream_t stream), (stream), 1, MC_HIP_V5)                    \
  X(hipStreamSynchronize, hipError_t, (hipStream_t stream), (stream), 1, MC_HIP_V5)                \
  X(hipStreamQuery, hipError_t, (hipStream_t stream), (stream), 1, MC_HIP_V5)                      \
  X(hipStreamWaitEvent, hipError_t, (hipStream_t stream, hipEvent_t event, unsigned int flags),    \
    (stream, event, flags), 1, MC_HIP_V5)                                                          \
  X(hipEventCreateWithFlags, hipError_t, (hipEvent_t * event, unsigned flags), (event, flags), 1,  \
    MC_HIP_V5)                                                                                     \
  X(hipEventDestroy, hipError_t, (hipEvent_t event), (event), 1, MC_HIP_V5)                        \
  X(hipEventRecord, hipError_t, (hipEvent_t event, hipStream_t stream), (event, stream), 1,        \
    MC_HIP_V5)                                                                                     \
  X(hipEventSynchronize, hipError_t, (hipEvent_t event), (event), 1, MC_HIP_V5)                    \
  X(hipEventQuery, hipError_t, (hipEvent_t event), (event), 1, MC_HIP_V5)                          \
  X(hipMalloc, hipError_t, (void **ptr, size_t size), (ptr, size), 1, MC_HIP_V5)                   \
  X(hipMallocManaged, hipError_t, (void **dev_ptr, size_t size, unsigned int flags), (dev_ptr,     \
    size, flags), 1, MC_HIP_V5)                                                                    \
  X(hipFree, hipError_t, (void *ptr), (ptr), 1, MC_HIP_V5)                                         \
  X(hipMemcpy, hipError_t, (void *dst, const void *src, size_t sizeBytes, hipMemcpyKind kind),     \
    (dst, src, sizeBytes, kind), 1, MC_HIP_V5)                                                     \
  X(hipMemcpyAsync, hipError_t, (void *dst, const void *src, size_t sizeBytes, hipMemcpyKind kind, \
    hipStream_t stream), (dst, src, sizeBytes, kind, stream), 1, MC_HIP_V5)                        \
  X(hipMemsetD32Async, hipError_t, (hipDeviceptr_t dst, int value, size_t count, hipStream_t       \
    stream), (dst, value, count, stream), 1, MC_HIP_V5)                                            \
  X(hipMemsetD16Async, hipError_t, (hipDeviceptr_t dest, unsigned short value, size_t count,       \
    hipStream_t stream), (dest, value, count, stream), 1, MC_HIP_V5)                               \
  X(hipHostRegister, hipError_t, (void *hostPtr, size_t sizeBytes, unsigned int flags), (hostPtr,  \
    sizeBytes, flags), 1, MC_HIP_V5)                                                               \
  X(hipHostUnregister, hipError_t, (void *hostPtr), (hostPtr), 1, MC_HIP_V5)                       \
  X(hipHostGetDevicePointer, hipError_t, (void **devPtr, void *hstPtr, unsigned int flags),        \
    (devPtr, hstPtr, flags), 1, MC_HIP_V5)                                                         \
  X(hipDeviceSynchronize, hipError_t, (void), (), 1, MC_HIP_V5)

#define MC_HIP_FIELD(name, ret, params, args, required, since) ret(*name) params;
typedef struct mc_hip_fns {
  MC_HIP_SYMBOLS(MC_HIP_FIELD)
} mc_hip_fns;
#undef MC_HIP_FIELD

#endif /* MGPU_CACHED_HIP_API_H */
