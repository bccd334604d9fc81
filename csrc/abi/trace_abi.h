/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* trace_abi.h - the traced wrappers of the mgpu* entry points (trace_abi.c), for the ABI edge
 * (abi_cuda.c, abi_rocm.c: MC_TRACE_CALL at the top of each entry point).
 *
 * Each wrapper mc_trace_X takes the entry point mgpuX itself as its first argument (`entry`, of the
 * function type mc_entry_X) and calls it back through that pointer, so the wrappers depend on
 * nothing of the edge (no call cycle between the files) and the untraced path is unchanged:
 *     MC_TRACE_CALL(mc_trace_ModuleLoad(mgpuModuleLoad, data, gpuBlobSize));
 */
#ifndef MGPU_CACHED_TRACE_ABI_H
#define MGPU_CACHED_TRACE_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "platform/cuda_api.h"
#include "trace/trace.h"

/* StridedMemRefType<T, 1>, as the ROCm wrapper's mgpuMemGetDeviceMemRef1d* return it by value. */
typedef struct {
  float *allocated, *aligned;
  int64_t offset, sizes[1], strides[1];
} mc_memref1d_f32;
typedef struct {
  int32_t *allocated, *aligned;
  int64_t offset, sizes[1], strides[1];
} mc_memref1d_i32;


typedef CUmodule mc_entry_ModuleLoad(void *data, size_t size);
CUmodule mc_trace_ModuleLoad(mc_entry_ModuleLoad *entry, void *data, size_t size);

typedef CUmodule mc_entry_ModuleLoadJIT(void *data, int opt, size_t size);
CUmodule mc_trace_ModuleLoadJIT(mc_entry_ModuleLoadJIT *entry, void *data, int opt, size_t size);

typedef void mc_entry_ModuleUnload(CUmodule module);
void mc_trace_ModuleUnload(mc_entry_ModuleUnload *entry, CUmodule module);

typedef CUfunction mc_entry_ModuleGetFunction(CUmodule module, const char *name);
CUfunction mc_trace_ModuleGetFunction(mc_entry_ModuleGetFunction *entry, CUmodule module,
                                      const char *name);

typedef void mc_entry_LaunchKernel(CUfunction function, intptr_t gx, intptr_t gy, intptr_t gz,
                                   intptr_t bx, intptr_t by, intptr_t bz, int32_t smem,
                                   CUstream stream, void **params, void **extra, size_t n);
void mc_trace_LaunchKernel(mc_entry_LaunchKernel *entry, CUfunction function, intptr_t gx,
                           intptr_t gy, intptr_t gz, intptr_t bx, intptr_t by, intptr_t bz,
                           int32_t smem, CUstream stream, void **params, void **extra, size_t n);

typedef void mc_entry_LaunchKernelCooperative(CUfunction function, intptr_t gx, intptr_t gy,
                                              intptr_t gz, intptr_t cx, intptr_t cy, intptr_t cz,
                                              intptr_t bx, intptr_t by, intptr_t bz, int32_t smem,
                                              CUstream stream, void **params, void **extra);
void mc_trace_LaunchKernelCooperative(mc_entry_LaunchKernelCooperative *entry, CUfunction function,
                                      intptr_t gx, intptr_t gy, intptr_t gz, intptr_t cx,
                                      intptr_t cy, intptr_t cz, intptr_t bx, intptr_t by,
                                      intptr_t bz, int32_t smem, CUstream stream, void **params,
                                      void **extra);

typedef void mc_entry_LaunchClusterKernel(CUfunction function, intptr_t cx, intptr_t cy,
                                          intptr_t cz, intptr_t gx, intptr_t gy, intptr_t gz,
                                          intptr_t bx, intptr_t by, intptr_t bz, int32_t smem,
                                          CUstream stream, void **params, void **extra, size_t n);
void mc_trace_LaunchClusterKernel(mc_entry_LaunchClusterKernel *entry, CUfunction function,
                                  intptr_t cx, intptr_t cy, intptr_t cz, intptr_t gx, intptr_t gy,
                                  intptr_t gz, intptr_t bx, intptr_t by, intptr_t bz, int32_t smem,
                                  CUstream stream, void **params, void **extra, size_t n);

typedef CUstream mc_entry_StreamCreate(void);
CUstream mc_trace_StreamCreate(mc_entry_StreamCreate *entry);

typedef void mc_entry_StreamDestroy(CUstream stream);
void mc_trace_StreamDestroy(mc_entry_StreamDestroy *entry, CUstream stream);

typedef void mc_entry_StreamSynchronize(CUstream stream);
void mc_trace_StreamSynchronize(mc_entry_StreamSynchronize *entry, CUstream stream);

typedef void mc_entry_StreamWaitEvent(CUstream stream, CUevent event);
void mc_trace_StreamWaitEvent(mc_entry_StreamWaitEvent *entry, CUstream stream, CUevent event);

typedef CUevent mc_entry_EventCreate(void);
CUevent mc_trace_EventCreate(mc_entry_EventCreate *entry);

typedef void mc_entry_EventDestroy(CUevent event);
void mc_trace_EventDestroy(mc_entry_EventDestroy *entry, CUevent event);

typedef void mc_entry_EventSynchronize(CUevent event);
void mc_trace_EventSynchronize(mc_entry_EventSynchronize *entry, CUevent event);

typedef void mc_entry_EventRecord(CUevent event, CUstream stream);
void mc_trace_EventRecord(mc_entry_EventRecord *entry, CUevent event, CUstream stream);

typedef void *mc_entry_MemAlloc(uint64_t bytes, CUstream stream, bool host_shared);
void *mc_trace_MemAlloc(mc_entry_MemAlloc *entry, uint64_t bytes, CUstream stream,
                        bool host_shared);

typedef void mc_entry_MemFree(void *ptr, CUstream stream);
void mc_trace_MemFree(mc_entry_MemFree *entry, void *ptr, CUstream stream);

typedef void mc_entry_Memcpy(void *dst, void *src, size_t bytes, CUstream stream);
void mc_trace_Memcpy(mc_entry_Memcpy *entry, void *dst, void *src, size_t bytes, CUstream stream);

typedef void mc_entry_Memset32(void *dst, unsigned int value, size_t count, CUstream stream);
void mc_trace_Memset32(mc_entry_Memset32 *entry, void *dst, unsigned int value, size_t count,
                       CUstream stream);

typedef void mc_entry_Memset16(void *dst, unsigned short value, size_t count, CUstream stream);
void mc_trace_Memset16(mc_entry_Memset16 *entry, void *dst, unsigned short value, size_t count,
                       CUstream stream);

typedef void mc_entry_MemHostRegister(void *ptr, uint64_t bytes);
void mc_trace_MemHostRegister(mc_entry_MemHostRegister *entry, void *ptr, uint64_t bytes);

typedef void mc_entry_MemHostRegisterMemRef(int64_t rank, void *descriptor, int64_t element_bytes);
void mc_trace_MemHostRegisterMemRef(mc_entry_MemHostRegisterMemRef *entry, int64_t rank,
                                    void *descriptor, int64_t element_bytes);

typedef void mc_entry_MemHostUnregister(void *ptr);
void mc_trace_MemHostUnregister(mc_entry_MemHostUnregister *entry, void *ptr);

typedef void mc_entry_MemHostUnregisterMemRef(int64_t rank, void *descriptor,
                                              int64_t element_bytes);
void mc_trace_MemHostUnregisterMemRef(mc_entry_MemHostUnregisterMemRef *entry, int64_t rank,
                                      void *descriptor, int64_t element_bytes);

typedef void mc_entry_SetDefaultDevice(int32_t device);
void mc_trace_SetDefaultDevice(mc_entry_SetDefaultDevice *entry, int32_t device);

typedef void mc_entry_TensorMapEncodeTiled(CUtensorMap *map, int type, cuuint32_t rank,
                                           void *address, const cuuint64_t *dim,
                                           const cuuint64_t *strides, const cuuint32_t *box,
                                           const cuuint32_t *element_strides, int interleave,
                                           int swizzle, int l2, int oob);
void mc_trace_TensorMapEncodeTiled(mc_entry_TensorMapEncodeTiled *entry, CUtensorMap *map, int type,
                                   cuuint32_t rank, void *address, const cuuint64_t *dim,
                                   const cuuint64_t *strides, const cuuint32_t *box,
                                   const cuuint32_t *element_strides, int interleave, int swizzle,
                                   int l2, int oob);

typedef void *mc_entry_TensorMapEncodeTiledMemref(int64_t rank, void *descriptor, int type,
                                                  int interleave, int swizzle, int l2, int oob,
                                                  int64_t *box);
void *mc_trace_TensorMapEncodeTiledMemref(mc_entry_TensorMapEncodeTiledMemref *entry, int64_t rank,
                                          void *descriptor, int type, int interleave, int swizzle,
                                          int l2, int oob, int64_t *box);

typedef void mc_entry_ModuleGetGlobal(void **ptr, size_t *bytes, CUmodule module, const char *name);
void mc_trace_ModuleGetGlobal(mc_entry_ModuleGetGlobal *entry, void **ptr, size_t *bytes,
                              CUmodule module, const char *name);

typedef mc_memref1d_f32 mc_entry_MemGetDeviceMemRef1dFloat(float *allocated, float *aligned,
                                                           int64_t offset, int64_t size,
                                                           int64_t stride);
mc_memref1d_f32 mc_trace_MemGetDeviceMemRef1dFloat(mc_entry_MemGetDeviceMemRef1dFloat *entry,
                                                   float *allocated, float *aligned, int64_t offset,
                                                   int64_t size, int64_t stride);

typedef mc_memref1d_i32 mc_entry_MemGetDeviceMemRef1dInt32(int32_t *allocated, int32_t *aligned,
                                                           int64_t offset, int64_t size,
                                                           int64_t stride);
mc_memref1d_i32 mc_trace_MemGetDeviceMemRef1dInt32(mc_entry_MemGetDeviceMemRef1dInt32 *entry,
                                                   int32_t *allocated, int32_t *aligned,
                                                   int64_t offset, int64_t size, int64_t stride);

#endif
