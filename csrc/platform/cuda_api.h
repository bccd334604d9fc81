/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* cuda_api.h - our own declarations of the CUDA driver API subset mgpu-cached uses.
 *
 * The library never includes <cuda.h>: it must build on machines without the CUDA toolkit and
 * load libcuda.so.1 at run time. Types keep the driver's names so that the symbol table below can be
 * checked against the real header (tests/conformance compiles it with MC_USE_REAL_CUDA_H defined);
 * constants carry an MC_ prefix so that both can live in one translation unit.
 *
 * MC_CUDA_SYMBOLS(X) is the one symbol table:
 * X(field, exported_name, return, (params), (argument names), required).
 * driver.c resolves it with dlsym, tests/drivers build fake and counting drivers from it.
 */
#ifndef MGPU_CACHED_CUDA_API_H
#define MGPU_CACHED_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef MC_USE_REAL_CUDA_H
#include <cuda.h>
#else
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUlib_st *CUlibrary;
typedef struct CUkern_st *CUkernel;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef int CUstreamCaptureMode;   /* enum in cuda.h: GLOBAL 0, THREAD_LOCAL 1, RELAXED 2 */
typedef int CUstreamCaptureStatus; /* enum in cuda.h: NONE 0, ACTIVE 1, INVALIDATED 2 */
typedef int CUjit_option;
typedef int CUlibraryOption;
typedef int CUdevice_attribute;
typedef int CUfunction_attribute;
typedef int CUtensorMapDataType;
typedef int CUtensorMapInterleave;
typedef int CUtensorMapSwizzle;
typedef int CUtensorMapL2promotion;
typedef int CUtensorMapFloatOOBfill;
typedef int CUlaunchAttributeID;
typedef uint32_t cuuint32_t;
typedef uint64_t cuuint64_t;

/* CUtensorMap: 128 opaque bytes, 128-byte aligned (CUDA 13's cuda.h; CUDA 12 asked for 64). */
typedef struct CUtensorMap_st {
  _Alignas(128) cuuint64_t opaque[16];
} CUtensorMap;

/* CUlaunchAttributeValue is a 64-byte, 8-byte aligned union; we only use these members. */
typedef union CUlaunchAttributeValue_union {
  char pad[64];
  cuuint64_t align_; /* the real union has 64-bit members: 8-byte alignment */
  int cooperative;
  struct {
    unsigned int x, y, z;
  } clusterDim;
  int clusterSchedulingPolicyPreference;
} CUlaunchAttributeValue;

typedef struct CUlaunchAttribute_st {
  CUlaunchAttributeID id;
  char pad[8 - sizeof(CUlaunchAttributeID)];
  CUlaunchAttributeValue value;
} CUlaunchAttribute;

/* A kernel node's parameters (the _v2 layout of CUDA 12+, what cuGraphAddKernelNode_v2 and
 * cuGraphExecKernelNodeSetParams_v2 take). */
typedef struct CUDA_KERNEL_NODE_PARAMS_v2_st {
  CUfunction func;
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  void **kernelParams;
  void **extra;
  CUkernel kern;
  CUcontext ctx;
} CUDA_KERNEL_NODE_PARAMS;

/* Memory pool properties (cuMemPoolCreate): the layout of CUDA 12/13's CUmemPoolProps_v1. */
typedef struct CUmemLocation_st {
  int type; /* CU_MEM_LOCATION_TYPE_DEVICE = 1 */
  int id;
} CUmemLocation;
typedef struct CUmemPoolProps_st {
  int allocType;  /* CU_MEM_ALLOCATION_TYPE_PINNED = 1 */
  int handleTypes; /* CU_MEM_HANDLE_TYPE_NONE = 0 */
  CUmemLocation location;
  void *win32SecurityAttributes;
  size_t maxSize;
  unsigned short usage;
  unsigned char reserved[54];
} CUmemPoolProps;

typedef struct CUlaunchConfig_st {
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned int numAttrs;
} CUlaunchConfig;
#endif /* MC_USE_REAL_CUDA_H */

/* Constants (values from cuda.h; checked by the conformance test). */
#define MC_CUDA_SUCCESS 0
#define MC_CUDA_ERROR_INVALID_VALUE 1
#define MC_CUDA_ERROR_OUT_OF_MEMORY 2
#define MC_CUDA_ERROR_NOT_INITIALIZED 3
#define MC_CUDA_ERROR_DEINITIALIZED 4
#define MC_CUDA_ERROR_NO_DEVICE 100
#define MC_CUDA_ERROR_INVALID_DEVICE 101
#define MC_CUDA_ERROR_INVALID_IMAGE 200
#define MC_CUDA_ERROR_INVALID_CONTEXT 201
#define MC_CUDA_ERROR_INVALID_HANDLE 400
#define MC_CUDA_ERROR_NOT_FOUND 500
#define MC_CUDA_ERROR_NOT_READY 600
#define MC_CUDA_ERROR_NOT_SUPPORTED 801
#define MC_CU_STREAM_NON_BLOCKING 0x1
#define MC_CU_EVENT_DISABLE_TIMING 0x2
#define MC_CU_MEM_ATTACH_GLOBAL 0x1
#define MC_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN 97
#define MC_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define MC_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define MC_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8
#define MC_CU_JIT_ERROR_LOG_BUFFER 5
#define MC_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6
#define MC_CU_JIT_OPTIMIZATION_LEVEL 7
#define MC_CU_LAUNCH_ATTRIBUTE_COOPERATIVE 2
#define MC_CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION 4
#define MC_CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE 5
#define MC_CU_CLUSTER_SCHEDULING_POLICY_SPREAD 1
#define MC_CU_STREAM_CAPTURE_MODE_GLOBAL 0
#define MC_CU_STREAM_CAPTURE_MODE_RELAXED 2
#define MC_CU_STREAM_CAPTURE_STATUS_NONE 0
#define MC_CU_STREAM_CAPTURE_STATUS_ACTIVE 1
#define MC_CU_MEM_ALLOCATION_TYPE_PINNED 1
#define MC_CU_MEM_LOCATION_TYPE_DEVICE 1
#define MC_CUDA_ERROR_CONTEXT_IS_DESTROYED 709
#define MC_CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED 900
#define MC_CUDA_ERROR_STREAM_CAPTURE_INVALIDATED 901

/* The symbol table. required=1: the library cannot work without it (stock mode needs these);
 * required=0: optional (newer drivers); the cached mode checks what it needs at init. */
#define MC_CUDA_SYMBOLS(X)                                                                         \
  X(cuGetErrorName, cuGetErrorName, CUresult, (CUresult error, const char **pStr), (error, pStr),  \
    1)                                                                                             \
  X(cuInit, cuInit, CUresult, (unsigned int flags), (flags), 1)                                    \
  X(cuDriverGetVersion, cuDriverGetVersion, CUresult, (int *driverVersion), (driverVersion), 1)    \
  X(cuDeviceGet, cuDeviceGet, CUresult, (CUdevice * device, int ordinal), (device, ordinal), 1)    \
  X(cuDeviceGetCount, cuDeviceGetCount, CUresult, (int *count), (count), 1)                        \
  X(cuDeviceGetAttribute, cuDeviceGetAttribute, CUresult, (int *pi, CUdevice_attribute attrib,     \
    CUdevice dev), (pi, attrib, dev), 1)                                                           \
  X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, CUresult, (CUcontext * pctx, CUdevice      \
    dev), (pctx, dev), 1)                                                                          \
  X(cuCtxGetCurrent, cuCtxGetCurrent, CUresult, (CUcontext * pctx), (pctx), 1)                     \
  X(cuCtxPushCurrent, cuCtxPushCurrent_v2, CUresult, (CUcontext ctx), (ctx), 1)                    \
  X(cuCtxPopCurrent, cuCtxPopCurrent_v2, CUresult, (CUcontext * pctx), (pctx), 1)                  \
  X(cuCtxSynchronize, cuCtxSynchronize, CUresult, (void), (), 1)                                  \
  X(cuModuleLoadData, cuModuleLoadData, CUresult, (CUmodule * module, const void *image), (module, \
    image), 1)                                                                                     \
  X(cuModuleLoadDataEx, cuModuleLoadDataEx, CUresult, (CUmodule * module, const void *image,       \
    unsigned int numOptions, CUjit_option *options, void **optionValues), (module, image,          \
    numOptions, options, optionValues), 1)                                                         \
  X(cuModuleUnload, cuModuleUnload, CUresult, (CUmodule hmod), (hmod), 1)                          \
  X(cuModuleGetFunction, cuModuleGetFunction, CUresult, (CUfunction * hfunc, CUmodule hmod, const  \
    char *name), (hfunc, hmod, name), 1)                                                           \
  X(cuFuncSetAttribute, cuFuncSetAttribute, CUresult, (CUfunction hfunc, CUfunction_attribute      \
    attrib, int value), (hfunc, attrib, value), 1)                                                 \
  X(cuLaunchKernel, cuLaunchKernel, CUresult, (CUfunction f, unsigned int gridDimX, unsigned int   \
    gridDimY, unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned      \
    int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void        \
    **extra), (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,   \
    hStream, kernelParams, extra), 1)                                                              \
  X(cuStreamCreate, cuStreamCreate, CUresult, (CUstream * phStream, unsigned int Flags),           \
    (phStream, Flags), 1)                                                                          \
  X(cuStreamDestroy, cuStreamDestroy_v2, CUresult, (CUstream hStream), (hStream), 1)               \
  X(cuStreamSynchronize, cuStreamSynchronize, CUresult, (CUstream hStream), (hStream), 1)          \
  X(cuStreamQuery, cuStreamQuery, CUresult, (CUstream hStream), (hStream), 1)                      \
  X(cuStreamWaitEvent, cuStreamWaitEvent, CUresult, (CUstream hStream, CUevent hEvent, unsigned    \
    int Flags), (hStream, hEvent, Flags), 1)                                                       \
  X(cuEventCreate, cuEventCreate, CUresult, (CUevent * phEvent, unsigned int Flags), (phEvent,     \
    Flags), 1)                                                                                     \
  X(cuEventDestroy, cuEventDestroy_v2, CUresult, (CUevent hEvent), (hEvent), 1)                    \
  X(cuEventRecord, cuEventRecord, CUresult, (CUevent hEvent, CUstream hStream), (hEvent, hStream), \
    1)                                                                                             \
  X(cuEventSynchronize, cuEventSynchronize, CUresult, (CUevent hEvent), (hEvent), 1)               \
  X(cuEventQuery, cuEventQuery, CUresult, (CUevent hEvent), (hEvent), 1)                           \
  X(cuMemAlloc, cuMemAlloc_v2, CUresult, (CUdeviceptr * dptr, size_t bytesize), (dptr, bytesize),  \
    1)                                                                                             \
  X(cuMemAllocManaged, cuMemAllocManaged, CUresult, (CUdeviceptr * dptr, size_t bytesize, unsigned \
    int flags), (dptr, bytesize, flags), 1)                                                        \
  X(cuMemFree, cuMemFree_v2, CUresult, (CUdeviceptr dptr), (dptr), 1)                              \
  X(cuMemcpy, cuMemcpy, CUresult, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount), (dst, src, \
    ByteCount), 1)                                                                                 \
  X(cuMemcpyAsync, cuMemcpyAsync, CUresult, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,   \
    CUstream hStream), (dst, src, ByteCount, hStream), 1)                                          \
  X(cuMemsetD32Async, cuMemsetD32Async, CUresult, (CUdeviceptr dstDevice, unsigned int ui, size_t  \
    N, CUstream hStream), (dstDevice, ui, N, hStream), 1)                                          \
  X(cuMemsetD16Async, cuMemsetD16Async, CUresult, (CUdeviceptr dstDevice, unsigned short us,       \
    size_t N, CUstream hStream), (dstDevice, us, N, hStream), 1)                                   \
  X(cuMemHostRegister, cuMemHostRegister_v2, CUresult, (void *p, size_t bytesize, unsigned int     \
    Flags), (p, bytesize, Flags), 1)                                                               \
  X(cuMemHostUnregister, cuMemHostUnregister, CUresult, (void *p), (p), 1)                         \
  X(cuLaunchKernelEx, cuLaunchKernelEx, CUresult, (const CUlaunchConfig *config, CUfunction f,     \
    void **kernelParams, void **extra), (config, f, kernelParams, extra), 0)                       \
  X(cuTensorMapEncodeTiled, cuTensorMapEncodeTiled, CUresult, (CUtensorMap * tensorMap,            \
    CUtensorMapDataType tensorDataType, cuuint32_t tensorRank, void *globalAddress, const          \
    cuuint64_t *globalDim, const cuuint64_t *globalStrides, const cuuint32_t *boxDim, const        \
    cuuint32_t *elementStrides, CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,      \
    CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill), (tensorMap,              \
    tensorDataType, tensorRank, globalAddress, globalDim, globalStrides, boxDim, elementStrides,   \
    interleave, swizzle, l2Promotion, oobFill), 0)                                                 \
  X(cuLibraryLoadData, cuLibraryLoadData, CUresult, (CUlibrary * library, const void *code,        \
    CUjit_option *jitOptions, void **jitOptionsValues, unsigned int numJitOptions,                 \
    CUlibraryOption *libraryOptions, void **libraryOptionValues, unsigned int                      \
    numLibraryOptions), (library, code, jitOptions, jitOptionsValues, numJitOptions,               \
    libraryOptions, libraryOptionValues, numLibraryOptions), 0)                                    \
  X(cuLibraryUnload, cuLibraryUnload, CUresult, (CUlibrary library), (library), 0)                 \
  X(cuLibraryGetKernel, cuLibraryGetKernel, CUresult, (CUkernel * pKernel, CUlibrary library,      \
    const char *name), (pKernel, library, name), 0)                                                \
  X(cuLibraryGetKernelCount, cuLibraryGetKernelCount, CUresult, (unsigned int *count, CUlibrary    \
    lib), (count, lib), 0)                                                                         \
  X(cuLibraryEnumerateKernels, cuLibraryEnumerateKernels, CUresult, (CUkernel * kernels, unsigned  \
    int numKernels, CUlibrary lib), (kernels, numKernels, lib), 0)                                 \
  X(cuKernelGetName, cuKernelGetName, CUresult, (const char **name, CUkernel hfunc), (name,        \
    hfunc), 0)                                                                                     \
  X(cuKernelGetFunction, cuKernelGetFunction, CUresult, (CUfunction * pFunc, CUkernel kernel),     \
    (pFunc, kernel), 0)                                                                            \
  /* graph launches (graph_launch.c, chain.c); all optional: without them launches take the     \
     stream path */                                                                                \
  X(cuFuncGetParamInfo, cuFuncGetParamInfo, CUresult, (CUfunction func, size_t paramIndex, size_t  \
    *paramOffset, size_t *paramSize), (func, paramIndex, paramOffset, paramSize), 0)               \
  X(cuGraphCreate, cuGraphCreate, CUresult, (CUgraph * phGraph, unsigned int flags), (phGraph,     \
    flags), 0)                                                                                     \
  X(cuGraphDestroy, cuGraphDestroy, CUresult, (CUgraph hGraph), (hGraph), 0)                       \
  X(cuGraphAddKernelNode, cuGraphAddKernelNode_v2, CUresult, (CUgraphNode * phGraphNode, CUgraph   \
    hGraph, const CUgraphNode *dependencies, size_t numDependencies, const                         \
    CUDA_KERNEL_NODE_PARAMS *nodeParams), (phGraphNode, hGraph, dependencies, numDependencies,     \
    nodeParams), 0)                                                                                \
  X(cuGraphInstantiate, cuGraphInstantiateWithFlags, CUresult, (CUgraphExec * phGraphExec, CUgraph \
    hGraph, unsigned long long flags), (phGraphExec, hGraph, flags), 0)                            \
  X(cuGraphExecDestroy, cuGraphExecDestroy, CUresult, (CUgraphExec hGraphExec), (hGraphExec), 0)  \
  X(cuGraphExecKernelNodeSetParams, cuGraphExecKernelNodeSetParams_v2, CUresult, (CUgraphExec      \
    hGraphExec, CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS *nodeParams), (hGraphExec, hNode,  \
    nodeParams), 0)                                                                                \
  X(cuGraphLaunch, cuGraphLaunch, CUresult, (CUgraphExec hGraphExec, CUstream hStream),            \
    (hGraphExec, hStream), 0)                                                                      \
  /* the good neighbour (issue 19); all optional */                                             \
  X(cuThreadExchangeStreamCaptureMode, cuThreadExchangeStreamCaptureMode, CUresult,                \
    (CUstreamCaptureMode * mode), (mode), 0)                                                       \
  X(cuStreamIsCapturing, cuStreamIsCapturing, CUresult, (CUstream hStream, CUstreamCaptureStatus  \
    *captureStatus), (hStream, captureStatus), 0)                                                  \
  X(cuCtxGetId, cuCtxGetId, CUresult, (CUcontext ctx, unsigned long long *ctxId), (ctx, ctxId), 0) \
  X(cuMemGetInfo, cuMemGetInfo_v2, CUresult, (size_t *free, size_t *total), (free, total), 0)      \
  X(cuMemPoolCreate, cuMemPoolCreate, CUresult, (CUmemoryPool * pool, const CUmemPoolProps         \
    *poolProps), (pool, poolProps), 0)                                                             \
  X(cuMemPoolTrimTo, cuMemPoolTrimTo, CUresult, (CUmemoryPool pool, size_t minBytesToKeep), (pool, \
    minBytesToKeep), 0)                                                                            \
  X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, CUresult, (CUdeviceptr * dptr, size_t        \
    bytesize, CUmemoryPool pool, CUstream hStream), (dptr, bytesize, pool, hStream), 0)            \
  X(cuMemFreeAsync, cuMemFreeAsync, CUresult, (CUdeviceptr dptr, CUstream hStream), (dptr,         \
    hStream), 0)

#endif /* MGPU_CACHED_CUDA_API_H */
