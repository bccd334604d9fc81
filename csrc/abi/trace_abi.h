/* trace_abi.h - the traced wrappers of the mgpu* entry points (trace_abi.c), for the ABI edge
 * (abi_cuda.c, abi_rocm.c: MC_TRACE_CALL at the top of each entry point). The two ROCm memref
 * helpers, which return structures abi_rocm.c defines, are declared there. */
#ifndef MGPU_CACHED_TRACE_ABI_H
#define MGPU_CACHED_TRACE_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "platform/cuda_api.h"
#include "trace/trace.h"

CUmodule mc_trace_ModuleLoad(void *data, size_t size);
CUmodule mc_trace_ModuleLoadJIT(void *data, int opt, size_t size);
void mc_trace_ModuleUnload(CUmodule module);
CUfunction mc_trace_ModuleGetFunction(CUmodule module, const char *name);
void mc_trace_LaunchKernel(CUfunction function, intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx,
                           intptr_t by, intptr_t bz, int32_t smem, CUstream stream, void **params,
                           void **extra, size_t n);
void mc_trace_LaunchKernelCooperative(CUfunction function, intptr_t gx, intptr_t gy, intptr_t gz,
                                      intptr_t cx, intptr_t cy, intptr_t cz, intptr_t bx,
                                      intptr_t by, intptr_t bz, int32_t smem, CUstream stream,
                                      void **params, void **extra);
void mc_trace_LaunchClusterKernel(CUfunction function, intptr_t cx, intptr_t cy, intptr_t cz,
                                  intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx, intptr_t by,
                                  intptr_t bz, int32_t smem, CUstream stream, void **params,
                                  void **extra, size_t n);
CUstream mc_trace_StreamCreate(void);
void mc_trace_StreamDestroy(CUstream stream);
void mc_trace_StreamSynchronize(CUstream stream);
void mc_trace_StreamWaitEvent(CUstream stream, CUevent event);
CUevent mc_trace_EventCreate(void);
void mc_trace_EventDestroy(CUevent event);
void mc_trace_EventSynchronize(CUevent event);
void mc_trace_EventRecord(CUevent event, CUstream stream);
void *mc_trace_MemAlloc(uint64_t bytes, CUstream stream, bool host_shared);
void mc_trace_MemFree(void *ptr, CUstream stream);
void mc_trace_Memcpy(void *dst, void *src, size_t bytes, CUstream stream);
void mc_trace_Memset32(void *dst, unsigned int value, size_t count, CUstream stream);
void mc_trace_Memset16(void *dst, unsigned short value, size_t count, CUstream stream);
void mc_trace_MemHostRegister(void *ptr, uint64_t bytes);
void mc_trace_MemHostRegisterMemRef(int64_t rank, void *descriptor, int64_t element_bytes);
void mc_trace_MemHostUnregister(void *ptr);
void mc_trace_MemHostUnregisterMemRef(int64_t rank, void *descriptor, int64_t element_bytes);
void mc_trace_SetDefaultDevice(int32_t device);
void mc_trace_TensorMapEncodeTiled(CUtensorMap *map, int type, cuuint32_t rank, void *address,
                                   const cuuint64_t *dim, const cuuint64_t *strides,
                                   const cuuint32_t *box, const cuuint32_t *element_strides,
                                   int interleave, int swizzle, int l2, int oob);
void *mc_trace_TensorMapEncodeTiledMemref(int64_t rank, void *descriptor, int type, int interleave,
                                          int swizzle, int l2, int oob, int64_t *box);
void mc_trace_ModuleGetGlobal(void **ptr, size_t *bytes, CUmodule module, const char *name);

#endif
