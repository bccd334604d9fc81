/* trace_abi.c - the traced wrappers of the mgpu* entry points (see trace.h, MC_TRACE_CALL): each
 * starts a span with the call's arguments, calls the same entry point again (which then runs
 * untraced, mc_trace_bypass), and ends the span with the result. Launches and copies get a
 * sequence number that links them to their GPU span (trace_gpu.c). No state of its own.
 *
 * The prototypes are the ABI edge's (abi_cuda.c, abi_rocm.c), with the driver's handle types.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "platform/cuda_api.h"
#include "trace/trace.h"
#include "abi/trace_abi.h"

/* StridedMemRefType<T, 1> as abi_rocm.c returns it by value. */
typedef struct { float *allocated, *aligned; int64_t offset, sizes[1], strides[1]; } tr_memref_f32;
typedef struct {
  int32_t *allocated, *aligned;
  int64_t offset, sizes[1], strides[1];
} tr_memref_i32;

CUmodule mgpuModuleLoad(void *data, size_t gpuBlobSize);
CUmodule mgpuModuleLoadJIT(void *data, int optLevel, size_t assemblySize);
void mgpuModuleUnload(CUmodule module);
CUfunction mgpuModuleGetFunction(CUmodule module, const char *name);
void mgpuLaunchKernel(CUfunction function, intptr_t gridX, intptr_t gridY, intptr_t gridZ,
                      intptr_t blockX, intptr_t blockY, intptr_t blockZ, int32_t smem,
                      CUstream stream, void **params, void **extra, size_t paramsCount);
CUstream mgpuStreamCreate(void);
void mgpuStreamDestroy(CUstream stream);
void mgpuStreamSynchronize(CUstream stream);
void mgpuStreamWaitEvent(CUstream stream, CUevent event);
CUevent mgpuEventCreate(void);
void mgpuEventDestroy(CUevent event);
void mgpuEventSynchronize(CUevent event);
void mgpuEventRecord(CUevent event, CUstream stream);
void *mgpuMemAlloc(uint64_t sizeBytes, CUstream stream, bool isHostShared);
void mgpuMemFree(void *ptr, CUstream stream);
void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, CUstream stream);
void mgpuMemset32(void *dst, unsigned int value, size_t count, CUstream stream);
void mgpuMemset16(void *dst, unsigned short value, size_t count, CUstream stream);
void mgpuMemHostRegister(void *ptr, uint64_t sizeBytes);
void mgpuMemHostRegisterMemRef(int64_t rank, void *descriptor, int64_t elementSizeBytes);
void mgpuMemHostUnregister(void *ptr);
void mgpuMemHostUnregisterMemRef(int64_t rank, void *descriptor, int64_t elementSizeBytes);
void mgpuSetDefaultDevice(int32_t device);
void mgpuLaunchKernelCooperative(CUfunction function, intptr_t gridX, intptr_t gridY,
                                 intptr_t gridZ, intptr_t clusterX, intptr_t clusterY,
                                 intptr_t clusterZ, intptr_t blockX, intptr_t blockY,
                                 intptr_t blockZ, int32_t smem, CUstream stream, void **params,
                                 void **extra);
void mgpuLaunchClusterKernel(CUfunction function, intptr_t clusterX, intptr_t clusterY,
                             intptr_t clusterZ, intptr_t gridX, intptr_t gridY, intptr_t gridZ,
                             intptr_t blockX, intptr_t blockY, intptr_t blockZ, int32_t smem,
                             CUstream stream, void **params, void **extra, size_t paramsCount);
void mgpuTensorMapEncodeTiled(CUtensorMap *tensorMap, int tensorDataType, cuuint32_t tensorRank,
                              void *globalAddress, const cuuint64_t *globalDim,
                              const cuuint64_t *globalStrides, const cuuint32_t *boxDim,
                              const cuuint32_t *elementStrides, int interleave, int swizzle,
                              int l2Promotion, int oobFill);
void *mgpuTensorMapEncodeTiledMemref(int64_t tensorRank, void *rankedDescriptor,
                                     int tensorDataType, int interleave, int swizzle,
                                     int l2Promotion, int oobFill, int64_t *inputBoxDims);
void mgpuModuleGetGlobal(void **devPtr, size_t *bytes, CUmodule module, const char *name);
tr_memref_f32 mgpuMemGetDeviceMemRef1dFloat(float *allocated, float *aligned, int64_t offset,
                                            int64_t size, int64_t stride);
tr_memref_i32 mgpuMemGetDeviceMemRef1dInt32(int32_t *allocated, int32_t *aligned,
                                            int64_t offset, int64_t size, int64_t stride);

#define U(x) ((uint64_t)(uintptr_t)(x))
#define SPAN(id)                                                                                  \
  mc_trace_span sp;                                                                               \
  mc_trace_begin(&sp, MC_TR_##id)
/* the wrapper's own call of the entry point (untraced) */
#define CALL(expr) (mc_trace_bypass(), expr)

static void dims(mc_trace_span *sp, intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx,
                 intptr_t by, intptr_t bz, int32_t smem) {
  sp->rec.grid[0] = (uint32_t)gx, sp->rec.grid[1] = (uint32_t)gy, sp->rec.grid[2] = (uint32_t)gz;
  sp->rec.block[0] = (uint32_t)bx, sp->rec.block[1] = (uint32_t)by;
  sp->rec.block[2] = (uint32_t)bz;
  sp->rec.smem = smem;
}

static void launch_span(mc_trace_span *sp, CUfunction function, CUstream stream) {
  sp->rec.a = U(function);
  sp->rec.stream = U(stream);
  sp->rec.name = mc_trace_function_lookup(function);
  sp->rec.seq = mc_trace_next_seq();
  if (mc_trace_gpu) sp->rec.flags |= MC_TRACE_F_GPU;
}

static void copy_span(mc_trace_span *sp, void *dst, uint64_t bytes, CUstream stream) {
  sp->rec.a = U(dst);
  sp->rec.b = bytes;
  sp->rec.stream = U(stream);
  sp->rec.seq = mc_trace_next_seq();
  if (mc_trace_gpu) sp->rec.flags |= MC_TRACE_F_GPU;
}

CUmodule mc_trace_ModuleLoad(void *data, size_t size) {
  SPAN(ModuleLoad);
  sp.rec.a = U(data), sp.rec.b = size;
  CUmodule m = CALL(mgpuModuleLoad(data, size));
  sp.rec.res = U(m);
  mc_trace_end(&sp);
  return m;
}

CUmodule mc_trace_ModuleLoadJIT(void *data, int opt, size_t size) {
  SPAN(ModuleLoadJIT);
  sp.rec.a = U(data), sp.rec.b = (uint64_t)opt;
  CUmodule m = CALL(mgpuModuleLoadJIT(data, opt, size));
  sp.rec.res = U(m);
  mc_trace_end(&sp);
  return m;
}

void mc_trace_ModuleUnload(CUmodule module) {
  SPAN(ModuleUnload);
  sp.rec.a = U(module);
  CALL(mgpuModuleUnload(module));
  mc_trace_end(&sp);
}

CUfunction mc_trace_ModuleGetFunction(CUmodule module, const char *name) {
  SPAN(ModuleGetFunction);
  sp.rec.a = U(module);
  sp.rec.name = mc_trace_name_id(name);
  CUfunction f = CALL(mgpuModuleGetFunction(module, name));
  sp.rec.res = U(f);
  if (f && sp.rec.name) mc_trace_function_name(f, sp.rec.name);
  mc_trace_end(&sp);
  return f;
}

void mc_trace_LaunchKernel(CUfunction function, intptr_t gx, intptr_t gy, intptr_t gz,
                           intptr_t bx, intptr_t by, intptr_t bz, int32_t smem, CUstream stream,
                           void **params, void **extra, size_t n) {
  SPAN(LaunchKernel);
  launch_span(&sp, function, stream);
  dims(&sp, gx, gy, gz, bx, by, bz, smem);
  CALL(mgpuLaunchKernel(function, gx, gy, gz, bx, by, bz, smem, stream, params, extra, n));
  mc_trace_end(&sp);
}

void mc_trace_LaunchKernelCooperative(CUfunction function, intptr_t gx, intptr_t gy, intptr_t gz,
                                      intptr_t cx, intptr_t cy, intptr_t cz, intptr_t bx,
                                      intptr_t by, intptr_t bz, int32_t smem, CUstream stream,
                                      void **params, void **extra) {
  SPAN(LaunchKernelCooperative);
  launch_span(&sp, function, stream);
  dims(&sp, gx, gy, gz, bx, by, bz, smem);
  CALL(mgpuLaunchKernelCooperative(function, gx, gy, gz, cx, cy, cz, bx, by, bz, smem, stream,
                                   params, extra));
  mc_trace_end(&sp);
}

void mc_trace_LaunchClusterKernel(CUfunction function, intptr_t cx, intptr_t cy, intptr_t cz,
                                  intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx, intptr_t by,
                                  intptr_t bz, int32_t smem, CUstream stream, void **params,
                                  void **extra, size_t n) {
  SPAN(LaunchClusterKernel);
  launch_span(&sp, function, stream);
  dims(&sp, gx, gy, gz, bx, by, bz, smem);
  CALL(mgpuLaunchClusterKernel(function, cx, cy, cz, gx, gy, gz, bx, by, bz, smem, stream, params,
                               extra, n));
  mc_trace_end(&sp);
}

CUstream mc_trace_StreamCreate(void) {
  SPAN(StreamCreate);
  CUstream s = CALL(mgpuStreamCreate());
  sp.rec.res = U(s);
  mc_trace_end(&sp);
  return s;
}

void mc_trace_StreamDestroy(CUstream stream) {
  SPAN(StreamDestroy);
  sp.rec.stream = U(stream);
  CALL(mgpuStreamDestroy(stream));
  mc_trace_end(&sp);
}

void mc_trace_StreamSynchronize(CUstream stream) {
  SPAN(StreamSynchronize);
  sp.rec.stream = U(stream);
  CALL(mgpuStreamSynchronize(stream));
  mc_trace_end(&sp);
}

void mc_trace_StreamWaitEvent(CUstream stream, CUevent event) {
  SPAN(StreamWaitEvent);
  sp.rec.stream = U(stream), sp.rec.a = U(event);
  CALL(mgpuStreamWaitEvent(stream, event));
  mc_trace_end(&sp);
}

CUevent mc_trace_EventCreate(void) {
  SPAN(EventCreate);
  CUevent e = CALL(mgpuEventCreate());
  sp.rec.res = U(e);
  mc_trace_end(&sp);
  return e;
}

void mc_trace_EventDestroy(CUevent event) {
  SPAN(EventDestroy);
  sp.rec.a = U(event);
  CALL(mgpuEventDestroy(event));
  mc_trace_end(&sp);
}

void mc_trace_EventSynchronize(CUevent event) {
  SPAN(EventSynchronize);
  sp.rec.a = U(event);
  CALL(mgpuEventSynchronize(event));
  mc_trace_end(&sp);
}

void mc_trace_EventRecord(CUevent event, CUstream stream) {
  SPAN(EventRecord);
  sp.rec.a = U(event), sp.rec.stream = U(stream);
  CALL(mgpuEventRecord(event, stream));
  mc_trace_end(&sp);
}

void *mc_trace_MemAlloc(uint64_t bytes, CUstream stream, bool host_shared) {
  SPAN(MemAlloc);
  sp.rec.a = bytes, sp.rec.b = host_shared, sp.rec.stream = U(stream);
  void *p = CALL(mgpuMemAlloc(bytes, stream, host_shared));
  sp.rec.res = U(p);
  mc_trace_end(&sp);
  return p;
}

void mc_trace_MemFree(void *ptr, CUstream stream) {
  SPAN(MemFree);
  sp.rec.a = U(ptr), sp.rec.stream = U(stream);
  CALL(mgpuMemFree(ptr, stream));
  mc_trace_end(&sp);
}

void mc_trace_Memcpy(void *dst, void *src, size_t bytes, CUstream stream) {
  SPAN(Memcpy);
  copy_span(&sp, dst, bytes, stream);
  CALL(mgpuMemcpy(dst, src, bytes, stream));
  mc_trace_end(&sp);
}

void mc_trace_Memset32(void *dst, unsigned int value, size_t count, CUstream stream) {
  SPAN(Memset32);
  copy_span(&sp, dst, (uint64_t)count * 4, stream);
  CALL(mgpuMemset32(dst, value, count, stream));
  mc_trace_end(&sp);
}

void mc_trace_Memset16(void *dst, unsigned short value, size_t count, CUstream stream) {
  SPAN(Memset16);
  copy_span(&sp, dst, (uint64_t)count * 2, stream);
  CALL(mgpuMemset16(dst, value, count, stream));
  mc_trace_end(&sp);
}

void mc_trace_MemHostRegister(void *ptr, uint64_t bytes) {
  SPAN(MemHostRegister);
  sp.rec.a = U(ptr), sp.rec.b = bytes;
  CALL(mgpuMemHostRegister(ptr, bytes));
  mc_trace_end(&sp);
}

void mc_trace_MemHostRegisterMemRef(int64_t rank, void *descriptor, int64_t element_bytes) {
  SPAN(MemHostRegisterMemRef);
  sp.rec.a = U(descriptor), sp.rec.b = (uint64_t)rank;
  CALL(mgpuMemHostRegisterMemRef(rank, descriptor, element_bytes));
  mc_trace_end(&sp);
}

void mc_trace_MemHostUnregister(void *ptr) {
  SPAN(MemHostUnregister);
  sp.rec.a = U(ptr);
  CALL(mgpuMemHostUnregister(ptr));
  mc_trace_end(&sp);
}

void mc_trace_MemHostUnregisterMemRef(int64_t rank, void *descriptor, int64_t element_bytes) {
  SPAN(MemHostUnregisterMemRef);
  sp.rec.a = U(descriptor), sp.rec.b = (uint64_t)rank;
  CALL(mgpuMemHostUnregisterMemRef(rank, descriptor, element_bytes));
  mc_trace_end(&sp);
}

void mc_trace_SetDefaultDevice(int32_t device) {
  SPAN(SetDefaultDevice);
  sp.rec.a = (uint64_t)(int64_t)device;
  CALL(mgpuSetDefaultDevice(device));
  mc_trace_end(&sp);
}

void mc_trace_TensorMapEncodeTiled(CUtensorMap *map, int type, cuuint32_t rank, void *address,
                                   const cuuint64_t *dim, const cuuint64_t *strides,
                                   const cuuint32_t *box, const cuuint32_t *element_strides,
                                   int interleave, int swizzle, int l2, int oob) {
  SPAN(TensorMapEncodeTiled);
  CALL(mgpuTensorMapEncodeTiled(map, type, rank, address, dim, strides, box, element_strides,
                                interleave, swizzle, l2, oob));
  mc_trace_end(&sp);
}

void *mc_trace_TensorMapEncodeTiledMemref(int64_t rank, void *descriptor, int type,
                                          int interleave, int swizzle, int l2, int oob,
                                          int64_t *box) {
  SPAN(TensorMapEncodeTiledMemref);
  sp.rec.a = U(descriptor), sp.rec.b = (uint64_t)rank;
  void *m = CALL(mgpuTensorMapEncodeTiledMemref(rank, descriptor, type, interleave, swizzle, l2,
                                                oob, box));
  sp.rec.res = U(m);
  mc_trace_end(&sp);
  return m;
}

void mc_trace_ModuleGetGlobal(void **ptr, size_t *bytes, CUmodule module, const char *name) {
  SPAN(ModuleGetGlobal);
  sp.rec.a = U(module);
  CALL(mgpuModuleGetGlobal(ptr, bytes, module, name));
  mc_trace_end(&sp);
}

tr_memref_f32 mc_trace_MemGetDeviceMemRef1dFloat(float *allocated, float *aligned, int64_t offset,
                                                 int64_t size, int64_t stride) {
  SPAN(MemGetDeviceMemRef1dFloat);
  tr_memref_f32 r = CALL(mgpuMemGetDeviceMemRef1dFloat(allocated, aligned, offset, size, stride));
  mc_trace_end(&sp);
  return r;
}

tr_memref_i32 mc_trace_MemGetDeviceMemRef1dInt32(int32_t *allocated, int32_t *aligned,
                                                 int64_t offset, int64_t size, int64_t stride) {
  SPAN(MemGetDeviceMemRef1dInt32);
  tr_memref_i32 r = CALL(mgpuMemGetDeviceMemRef1dInt32(allocated, aligned, offset, size, stride));
  mc_trace_end(&sp);
  return r;
}
