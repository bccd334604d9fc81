/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* trace_abi.c - the traced wrappers of the mgpu* entry points (see trace.h, MC_TRACE_CALL): each
 * starts a span with the call's arguments, calls the same entry point again through `entry`
 * (which then runs untraced, mc_trace_bypass), and ends the span with the result. Launches and
 * copies get a sequence number that links them to their GPU span (trace_gpu.c). No state of its
 * own.
 *
 * The entry points are passed in by the ABI edge (abi_cuda.c, abi_rocm.c; trace_abi.h): nothing
 * here names them, so the edge calls down into the wrappers and they never call up.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "platform/cuda_api.h"
#include "trace/trace.h"
#include "abi/trace_abi.h"

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

CUmodule mc_trace_ModuleLoad(mc_entry_ModuleLoad *entry, void *data, size_t size) {
  SPAN(ModuleLoad);
  sp.rec.a = U(data), sp.rec.b = size;
  CUmodule m = CALL(entry(data, size));
  sp.rec.res = U(m);
  mc_trace_end(&sp);
  return m;
}

CUmodule mc_trace_ModuleLoadJIT(mc_entry_ModuleLoadJIT *entry, void *data, int opt, size_t size) {
  SPAN(ModuleLoadJIT);
  sp.rec.a = U(data), sp.rec.b = (uint64_t)opt;
  CUmodule m = CALL(entry(data, opt, size));
  sp.rec.res = U(m);
  mc_trace_end(&sp);
  return m;
}

void mc_trace_ModuleUnload(mc_entry_ModuleUnload *entry, CUmodule module) {
  SPAN(ModuleUnload);
  sp.rec.a = U(module);
  CALL(entry(module));
  mc_trace_end(&sp);
}

CUfunction mc_trace_ModuleGetFunction(mc_entry_ModuleGetFunction *entry, CUmodule module,
                                      const char *name) {
  SPAN(ModuleGetFunction);
  sp.rec.a = U(module);
  sp.rec.name = mc_trace_name_id(name);
  CUfunction f = CALL(entry(module, name));
  sp.rec.res = U(f);
  if (f && sp.rec.name) mc_trace_function_name(f, sp.rec.name);
  mc_trace_end(&sp);
  return f;
}

void mc_trace_LaunchKernel(mc_entry_LaunchKernel *entry, CUfunction function, intptr_t gx,
                           intptr_t gy, intptr_t gz, intptr_t bx, intptr_t by, intptr_t bz,
                           int32_t smem, CUstream stream, void **params, void **extra, size_t n) {
  SPAN(LaunchKernel);
  launch_span(&sp, function, stream);
  dims(&sp, gx, gy, gz, bx, by, bz, smem);
  CALL(entry(function, gx, gy, gz, bx, by, bz, smem, stream, params, extra, n));
  mc_trace_end(&sp);
}

void mc_trace_LaunchKernelCooperative(mc_entry_LaunchKernelCooperative *entry, CUfunction function,
                                      intptr_t gx, intptr_t gy, intptr_t gz, intptr_t cx,
                                      intptr_t cy, intptr_t cz, intptr_t bx, intptr_t by,
                                      intptr_t bz, int32_t smem, CUstream stream, void **params,
                                      void **extra) {
  SPAN(LaunchKernelCooperative);
  launch_span(&sp, function, stream);
  dims(&sp, gx, gy, gz, bx, by, bz, smem);
  CALL(entry(function, gx, gy, gz, cx, cy, cz, bx, by, bz, smem, stream,
                                   params, extra));
  mc_trace_end(&sp);
}

void mc_trace_LaunchClusterKernel(mc_entry_LaunchClusterKernel *entry, CUfunction function,
                                  intptr_t cx, intptr_t cy, intptr_t cz, intptr_t gx, intptr_t gy,
                                  intptr_t gz, intptr_t bx, intptr_t by, intptr_t bz, int32_t smem,
                                  CUstream stream, void **params, void **extra, size_t n) {
  SPAN(LaunchClusterKernel);
  launch_span(&sp, function, stream);
  dims(&sp, gx, gy, gz, bx, by, bz, smem);
  CALL(entry(function, cx, cy, cz, gx, gy, gz, bx, by, bz, smem, stream, params,
                               extra, n));
  mc_trace_end(&sp);
}

CUstream mc_trace_StreamCreate(mc_entry_StreamCreate *entry) {
  SPAN(StreamCreate);
  CUstream s = CALL(entry());
  sp.rec.res = U(s);
  mc_trace_end(&sp);
  return s;
}

void mc_trace_StreamDestroy(mc_entry_StreamDestroy *entry, CUstream stream) {
  SPAN(StreamDestroy);
  sp.rec.stream = U(stream);
  CALL(entry(stream));
  mc_trace_end(&sp);
}

void mc_trace_StreamSynchronize(mc_entry_StreamSynchronize *entry, CUstream stream) {
  SPAN(StreamSynchronize);
  sp.rec.stream = U(stream);
  CALL(entry(stream));
  mc_trace_end(&sp);
}

void mc_trace_StreamWaitEvent(mc_entry_StreamWaitEvent *entry, CUstream stream, CUevent event) {
  SPAN(StreamWaitEvent);
  sp.rec.stream = U(stream), sp.rec.a = U(event);
  CALL(entry(stream, event));
  mc_trace_end(&sp);
}

CUevent mc_trace_EventCreate(mc_entry_EventCreate *entry) {
  SPAN(EventCreate);
  CUevent e = CALL(entry());
  sp.rec.res = U(e);
  mc_trace_end(&sp);
  return e;
}

void mc_trace_EventDestroy(mc_entry_EventDestroy *entry, CUevent event) {
  SPAN(EventDestroy);
  sp.rec.a = U(event);
  CALL(entry(event));
  mc_trace_end(&sp);
}

void mc_trace_EventSynchronize(mc_entry_EventSynchronize *entry, CUevent event) {
  SPAN(EventSynchronize);
  sp.rec.a = U(event);
  CALL(entry(event));
  mc_trace_end(&sp);
}

void mc_trace_EventRecord(mc_entry_EventRecord *entry, CUevent event, CUstream stream) {
  SPAN(EventRecord);
  sp.rec.a = U(event), sp.rec.stream = U(stream);
  CALL(entry(event, stream));
  mc_trace_end(&sp);
}

void *mc_trace_MemAlloc(mc_entry_MemAlloc *entry, uint64_t bytes, CUstream stream,
                        bool host_shared) {
  SPAN(MemAlloc);
  sp.rec.a = bytes, sp.rec.b = host_shared, sp.rec.stream = U(stream);
  void *p = CALL(entry(bytes, stream, host_shared));
  sp.rec.res = U(p);
  mc_trace_end(&sp);
  return p;
}

void mc_trace_MemFree(mc_entry_MemFree *entry, void *ptr, CUstream stream) {
  SPAN(MemFree);
  sp.rec.a = U(ptr), sp.rec.stream = U(stream);
  CALL(entry(ptr, stream));
  mc_trace_end(&sp);
}

void mc_trace_Memcpy(mc_entry_Memcpy *entry, void *dst, void *src, size_t bytes, CUstream stream) {
  SPAN(Memcpy);
  copy_span(&sp, dst, bytes, stream);
  CALL(entry(dst, src, bytes, stream));
  mc_trace_end(&sp);
}

void mc_trace_Memset32(mc_entry_Memset32 *entry, void *dst, unsigned int value, size_t count,
                       CUstream stream) {
  SPAN(Memset32);
  copy_span(&sp, dst, (uint64_t)count * 4, stream);
  CALL(entry(dst, value, count, stream));
  mc_trace_end(&sp);
}

void mc_trace_Memset16(mc_entry_Memset16 *entry, void *dst, unsigned short value, size_t count,
                       CUstream stream) {
  SPAN(Memset16);
  copy_span(&sp, dst, (uint64_t)count * 2, stream);
  CALL(entry(dst, value, count, stream));
  mc_trace_end(&sp);
}

void mc_trace_MemHostRegister(mc_entry_MemHostRegister *entry, void *ptr, uint64_t bytes) {
  SPAN(MemHostRegister);
  sp.rec.a = U(ptr), sp.rec.b = bytes;
  CALL(entry(ptr, bytes));
  mc_trace_end(&sp);
}

void mc_trace_MemHostRegisterMemRef(mc_entry_MemHostRegisterMemRef *entry, int64_t rank,
                                    void *descriptor, int64_t element_bytes) {
  SPAN(MemHostRegisterMemRef);
  sp.rec.a = U(descriptor), sp.rec.b = (uint64_t)rank;
  CALL(entry(rank, descriptor, element_bytes));
  mc_trace_end(&sp);
}

void mc_trace_MemHostUnregister(mc_entry_MemHostUnregister *entry, void *ptr) {
  SPAN(MemHostUnregister);
  sp.rec.a = U(ptr);
  CALL(entry(ptr));
  mc_trace_end(&sp);
}

void mc_trace_MemHostUnregisterMemRef(mc_entry_MemHostUnregisterMemRef *entry, int64_t rank,
                                      void *descriptor, int64_t element_bytes) {
  SPAN(MemHostUnregisterMemRef);
  sp.rec.a = U(descriptor), sp.rec.b = (uint64_t)rank;
  CALL(entry(rank, descriptor, element_bytes));
  mc_trace_end(&sp);
}

void mc_trace_SetDefaultDevice(mc_entry_SetDefaultDevice *entry, int32_t device) {
  SPAN(SetDefaultDevice);
  sp.rec.a = (uint64_t)(int64_t)device;
  CALL(entry(device));
  mc_trace_end(&sp);
}

void mc_trace_TensorMapEncodeTiled(mc_entry_TensorMapEncodeTiled *entry, CUtensorMap *map, int type,
                                   cuuint32_t rank, void *address, const cuuint64_t *dim,
                                   const cuuint64_t *strides, const cuuint32_t *box,
                                   const cuuint32_t *element_strides, int interleave, int swizzle,
                                   int l2, int oob) {
  SPAN(TensorMapEncodeTiled);
  CALL(entry(map, type, rank, address, dim, strides, box, element_strides,
                                interleave, swizzle, l2, oob));
  mc_trace_end(&sp);
}

void *mc_trace_TensorMapEncodeTiledMemref(mc_entry_TensorMapEncodeTiledMemref *entry, int64_t rank,
                                          void *descriptor, int type, int interleave, int swizzle,
                                          int l2, int oob, int64_t *box) {
  SPAN(TensorMapEncodeTiledMemref);
  sp.rec.a = U(descriptor), sp.rec.b = (uint64_t)rank;
  void *m = CALL(entry(rank, descriptor, type, interleave, swizzle, l2,
                                                oob, box));
  sp.rec.res = U(m);
  mc_trace_end(&sp);
  return m;
}

void mc_trace_ModuleGetGlobal(mc_entry_ModuleGetGlobal *entry, void **ptr, size_t *bytes,
                              CUmodule module, const char *name) {
  SPAN(ModuleGetGlobal);
  sp.rec.a = U(module);
  CALL(entry(ptr, bytes, module, name));
  mc_trace_end(&sp);
}

mc_memref1d_f32 mc_trace_MemGetDeviceMemRef1dFloat(mc_entry_MemGetDeviceMemRef1dFloat *entry,
                                                   float *allocated, float *aligned, int64_t offset,
                                                   int64_t size, int64_t stride) {
  SPAN(MemGetDeviceMemRef1dFloat);
  mc_memref1d_f32 r = CALL(entry(allocated, aligned, offset, size, stride));
  mc_trace_end(&sp);
  return r;
}

mc_memref1d_i32 mc_trace_MemGetDeviceMemRef1dInt32(mc_entry_MemGetDeviceMemRef1dInt32 *entry,
                                                   int32_t *allocated, int32_t *aligned,
                                                   int64_t offset, int64_t size, int64_t stride) {
  SPAN(MemGetDeviceMemRef1dInt32);
  mc_memref1d_i32 r = CALL(entry(allocated, aligned, offset, size, stride));
  mc_trace_end(&sp);
  return r;
}
