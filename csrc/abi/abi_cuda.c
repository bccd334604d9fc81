/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* abi_cuda.c - the ABI edge: every mgpu* symbol of the stock CUDA wrapper (libmlir_cuda_runtime,
 * LLVM 19-22 and 2026 main, without cuSPARSE), in upstream's order, with upstream's C signatures.
 *
 * Each function is thin: with MGPU_CACHED_DISABLE it hands over to the stock behaviour (stock.c);
 * otherwise it calls the cached implementation and reports a failed status in the stock style.
 * Trailing arguments that some callers do not pass (gpuBlobSize, paramsCount, the JIT
 * assemblySize) are declared but never read. MC_ABI_LLVM selects the caller flavour: 18 and newer
 * pass isHostShared to mgpuMemAlloc; a build for LLVM 14-17 callers (-DMC_ABI_LLVM=14) ignores it,
 * and so does the default build with MGPU_CACHED_IGNORE_HOST_SHARED=1 (config.h).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "platform/backend.h"
#include "launch/chain.h"
#include "support/config.h"
#include "platform/context.h"
#include "platform/driver.h"
#include "launch/launch.h"
#include "memory/memory.h"
#include "modules/module_cache.h"
#include "streams/pool.h"
#include "support/report.h"
#include "stock/stock.h"
#include "launch/tensor_map.h"
#include "abi/trace_abi.h"

#ifndef MC_ABI_LLVM
#define MC_ABI_LLVM 18
#endif

#define MC_EXPORT __attribute__((visibility("default")))

/* Report a failed status; returns nonzero if it failed. (A function, so `st` is evaluated once.) */
static inline int FAILED_REPORT(const char *where, mc_status st) {
  if (!MC_FAILED(st)) return 0;
  mc_report(where, st, NULL);
  return 1;
}

/* Opt-in chain replay (chain.h): every entry point that could observe a stream's work, or change
 * what a pending launch uses, first submits the launches deferred so far (one atomic load when
 * nothing is pending). The module look-ups do not, nor does mgpuModuleUnload (see there). */
#define CHAIN_FLUSH(where) (FAULT_CHECK(), FAILED_REPORT(where, mc_chain_flush()))

/* Faults (issue 19 item 5, context.h): a device whose context a CONTEXT_IS_DESTROYED made suspect
 * is checked (and recovered if it was reset) before the call uses any cached object of it; one
 * relaxed load when nothing happened. Entry points whose cached answer would skip the driver call
 * the stock wrapper makes also verify the context (mc_ctx_verify: one cuCtxGetId) and, while the
 * device's context is broken by a sticky error, make stock's driver call (the FAULT_* helpers
 * below), so they report what stock reports. */
#define FAULT_CHECK() (mc_ctx_trouble() ? mc_ctx_check_suspects() : (void)0)

/* In `device`'s context: run expr (a CUresult expression); report a failure as `call`. 1 when it
 * failed (reported), 0 when it succeeded. */
#define FAULT_STOCK_CALL(device, call, expr)                                                      \
  ({                                                                                              \
    mc_ctx_scope fs_scope_;                                                                       \
    mc_status fs_st_ = mc_ctx_enter((device), &fs_scope_);                                        \
    if (!MC_FAILED(fs_st_)) {                                                                     \
      CUresult fs_r_ = (expr);                                                                    \
      mc_ctx_leave(&fs_scope_);                                                                   \
      if (fs_r_ != 0) fs_st_ = MC_FAIL(call, (int)fs_r_);                                         \
    }                                                                                             \
    FAILED_REPORT(call, fs_st_);                                                                  \
  })

/* mgpuModuleLoad on a broken device: stock's cuModuleLoadData. 1: answered (*out: NULL, or what
 * the driver wrote, as stock returns); 0: the driver loaded it after all (the context works
 * again): unloaded, the cached path goes on. */
static int fault_module_load(int device, void *data, CUmodule *out) {
  CUmodule m = NULL;
  if (FAULT_STOCK_CALL(device, "cuModuleLoadData", mc_cu.cuModuleLoadData(&m, data))) {
    *out = m;
    return 1;
  }
  mc_cu.cuModuleUnload(m);
  return 0;
}

/* mgpuStreamCreate / mgpuEventCreate: the thread's device checked for a reset (context.h); on a
 * broken device stock's cuStreamCreate / cuEventCreate. 1: answered (*out: what the driver wrote,
 * as stock returns); 0: the cached path goes on (the driver made one after all: the context works
 * again, so it is destroyed). */
static int fault_create(mc_obj_kind kind, void **out) {
  int device = mc_thread_device();
  mc_ctx_verify(device);
  if (!mc_ctx_broken(device)) return 0;
  int stream = kind == MC_OBJ_STREAM;
  CUstream s = NULL;
  CUevent e = NULL;
  int failed = stream ? FAULT_STOCK_CALL(device, "cuStreamCreate",
                                         mc_cu.cuStreamCreate(&s, MC_CU_STREAM_NON_BLOCKING))
                      : FAULT_STOCK_CALL(device, "cuEventCreate",
                                         mc_cu.cuEventCreate(&e, MC_CU_EVENT_DISABLE_TIMING));
  if (failed) {
    *out = stream ? (void *)s : (void *)e;
    return 1;
  }
  if (stream) mc_cu.cuStreamDestroy(s);
  else mc_cu.cuEventDestroy(e);
  return 0;
}

/* mgpuStreamDestroy / mgpuEventDestroy of a live handle of ours on a broken device: stock's
 * cuStreamDestroy / cuEventDestroy (mc_pool_stock_destroy), its failure reported as stock's. 1:
 * answered; 0: the usual path goes on. */
static int fault_destroy(mc_obj_kind kind, void *handle, const char *call) {
  if (!mc_ctx_broken(mc_handle_device(handle))) return 0;
  CUresult r = 0;
  if (!mc_pool_stock_destroy(kind, handle, &r)) return 0;
  if (r) mc_report_cu(call, (int)r);
  return 1;
}

MC_EXPORT CUmodule mgpuModuleLoad(void *data, size_t gpuBlobSize) {
  MC_TRACE_CALL(mc_trace_ModuleLoad(mgpuModuleLoad, data, gpuBlobSize));
  (void)gpuBlobSize; /* not passed by LLVM < 18: never read */
  if (mc_disabled()) return mc_stock_module_load(data);
  FAULT_CHECK();
  int device = mc_thread_device();
  mc_chain_load_verify(device); /* or owed while chain replay's launches are pending */
  CUmodule fm = NULL;
  if (mc_ctx_broken(device) && fault_module_load(device, data, &fm)) return fm;
  mc_module *m = NULL;
  mc_status st = mc_module_load(data, 0, 0, &m, NULL, 0);
  return FAILED_REPORT("mgpuModuleLoad", st) ? NULL : (CUmodule)m;
}

MC_EXPORT CUmodule mgpuModuleLoadJIT(void *data, int optLevel, size_t assemblySize) {
  MC_TRACE_CALL(mc_trace_ModuleLoadJIT(mgpuModuleLoadJIT, data, optLevel, assemblySize));
  (void)assemblySize; /* LLVM 22 passes two arguments: never read */
  if (mc_disabled()) return mc_stock_module_load_jit(data, optLevel);
  FAULT_CHECK();
  int device = mc_thread_device();
  mc_chain_load_verify(device); /* or owed while chain replay's launches are pending */
  CUmodule fm = NULL;
  if (mc_ctx_broken(device) && fault_module_load(device, data, &fm)) return fm;
  mc_module *m = NULL;
  char log[4096];
  log[0] = 0;
  mc_status st = mc_module_load(data, 1, optLevel, &m, log, sizeof log);
  if (MC_FAILED(st)) {
    if (log[0]) mc_message("JIT compilation failed with: '%s'", log);
    mc_report("mgpuModuleLoadJIT", st, NULL);
    return NULL;
  }
  return (CUmodule)m;
}

MC_EXPORT void mgpuModuleUnload(CUmodule module) {
  MC_TRACE_CALL(mc_trace_ModuleUnload(mgpuModuleUnload, module));
  if (mc_disabled()) return mc_stock_module_unload(module);
  FAULT_CHECK();
  /* Chain replay (chain.h): an unload that keeps the module cached makes no driver call and
   * observes nothing, so pending launches stay pending (LLVM <= 20 code unloads after every
   * launch); one that unloads it from the driver submits them first (the cache's unload hook). */
  /* MGPU_CACHED_STOCK_SYNC: the device wait of the stock cuModuleUnload (issue 19, item 7), which
   * pending launches must be inside */
  if (mc_config()->stock_sync) {
    FAILED_REPORT("mgpuModuleUnload", mc_chain_flush());
    mc_device_drain();
  }
  /* On a broken device stock's cuModuleUnload reports the sticky error (and the module stays
   * loaded): report it the same; the cache lets go of its reference quietly. */
  int sticky = mc_ctx_trouble() ? mc_ctx_sticky(mc_thread_device()) : 0;
  mc_status st = mc_module_unload((mc_module *)module);
  if (sticky) mc_report_cu("cuModuleUnload", sticky);
  else FAILED_REPORT("mgpuModuleUnload", st);
}

MC_EXPORT CUfunction mgpuModuleGetFunction(CUmodule module, const char *name) {
  MC_TRACE_CALL(mc_trace_ModuleGetFunction(mgpuModuleGetFunction, module, name));
  if (mc_disabled()) return mc_stock_module_get_function(module, name);
  FAULT_CHECK();
  if (mc_ctx_trouble()) { /* a broken device: stock's cuModuleGetFunction fails, NULL returned */
    int sticky = mc_ctx_sticky(mc_thread_device());
    if (sticky) {
      mc_report_cu("cuModuleGetFunction", sticky);
      return NULL;
    }
  }
  mc_function *f = NULL;
  mc_status st = mc_module_get_function((mc_module *)module, name, &f);
  return FAILED_REPORT("mgpuModuleGetFunction", st) ? NULL : (CUfunction)f;
}

/* A launch's grid, block and dynamic shared memory as the driver takes them (launch.h says why the
 * edge converts them). */
#define LAUNCH_GD(gx, gy, gz, bx, by, bz, smem)                                                    \
  {{(unsigned)(gx), (unsigned)(gy), (unsigned)(gz)},                                              \
   {(unsigned)(bx), (unsigned)(by), (unsigned)(bz)},                                              \
   (unsigned)(smem)}

MC_EXPORT void mgpuLaunchKernel(CUfunction function, intptr_t gridX, intptr_t gridY,
                                intptr_t gridZ, intptr_t blockX, intptr_t blockY, intptr_t blockZ,
                                int32_t smem, CUstream stream, void **params, void **extra,
                                size_t paramsCount) {
  MC_TRACE_CALL(mc_trace_LaunchKernel(mgpuLaunchKernel, function, gridX, gridY, gridZ, blockX,
                                      blockY, blockZ, smem, stream, params, extra, paramsCount));
  (void)paramsCount; /* not passed by LLVM < 18: never read */
  if (mc_disabled())
    return mc_stock_launch_kernel(function, gridX, gridY, gridZ, blockX, blockY, blockZ, smem,
                                  stream, params, extra);
  FAULT_CHECK();
  /* chain replay: a launch on another stream than the pending launches' submits them first */
  FAILED_REPORT("mgpuLaunchKernel", mc_chain_flush_other(stream));
  mc_launch_dims d = {LAUNCH_GD(gridX, gridY, gridZ, blockX, blockY, blockZ, smem), {0, 0, 0}, 0};
  FAILED_REPORT("mgpuLaunchKernel", mc_launch((mc_function *)function, &d, stream, params, extra));
}

MC_EXPORT CUstream mgpuStreamCreate(void) {
  MC_TRACE_CALL(mc_trace_StreamCreate(mgpuStreamCreate));
  if (mc_disabled()) return mc_stock_stream_create();
  CHAIN_FLUSH("mgpuStreamCreate");
  CUstream s = NULL;
  if (fault_create(MC_OBJ_STREAM, (void **)&s)) return s;
  return FAILED_REPORT("mgpuStreamCreate", mc_stream_create(&s)) ? NULL : s;
}

MC_EXPORT void mgpuStreamDestroy(CUstream stream) {
  MC_TRACE_CALL(mc_trace_StreamDestroy(mgpuStreamDestroy, stream));
  if (mc_disabled()) return mc_stock_stream_destroy(stream);
  CHAIN_FLUSH("mgpuStreamDestroy");
  if (mc_ctx_trouble() && fault_destroy(MC_OBJ_STREAM, stream, "cuStreamDestroy(stream)")) return;
  FAILED_REPORT("mgpuStreamDestroy", mc_stream_destroy(stream));
}

MC_EXPORT void mgpuStreamSynchronize(CUstream stream) {
  MC_TRACE_CALL(mc_trace_StreamSynchronize(mgpuStreamSynchronize, stream));
  if (mc_disabled()) return mc_stock_stream_synchronize(stream);
  /* chain replay: what is pending is submitted; a chain on this stream leaves it kept (chain.h) */
  FAULT_CHECK();
  FAILED_REPORT("mgpuStreamSynchronize", mc_chain_flush_sync(stream));
  /* the NULL stream on a broken device: stock's cuStreamSynchronize(NULL) in the caller's
   * context (what stock reports: the sticky error, or INVALID_CONTEXT where none is current) */
  if (!stream && mc_ctx_trouble() && mc_ctx_broken(mc_thread_device())) {
    mc_report_cu("cuStreamSynchronize(stream)", mc_cu.cuStreamSynchronize(NULL));
    return;
  }
  FAILED_REPORT("mgpuStreamSynchronize", mc_stream_synchronize(stream));
}

MC_EXPORT void mgpuStreamWaitEvent(CUstream stream, CUevent event) {
  MC_TRACE_CALL(mc_trace_StreamWaitEvent(mgpuStreamWaitEvent, stream, event));
  if (mc_disabled()) return mc_stock_stream_wait_event(stream, event);
  CHAIN_FLUSH("mgpuStreamWaitEvent");
  FAILED_REPORT("mgpuStreamWaitEvent", mc_stream_wait_event(stream, event));
}

MC_EXPORT CUevent mgpuEventCreate(void) {
  MC_TRACE_CALL(mc_trace_EventCreate(mgpuEventCreate));
  if (mc_disabled()) return mc_stock_event_create();
  CHAIN_FLUSH("mgpuEventCreate");
  CUevent e = NULL;
  if (fault_create(MC_OBJ_EVENT, (void **)&e)) return e;
  return FAILED_REPORT("mgpuEventCreate", mc_event_create(&e)) ? NULL : e;
}

MC_EXPORT void mgpuEventDestroy(CUevent event) {
  MC_TRACE_CALL(mc_trace_EventDestroy(mgpuEventDestroy, event));
  if (mc_disabled()) return mc_stock_event_destroy(event);
  CHAIN_FLUSH("mgpuEventDestroy");
  if (mc_ctx_trouble() && fault_destroy(MC_OBJ_EVENT, event, "cuEventDestroy(event)")) return;
  FAILED_REPORT("mgpuEventDestroy", mc_event_destroy_any(event));
}

MC_EXPORT void mgpuEventSynchronize(CUevent event) {
  MC_TRACE_CALL(mc_trace_EventSynchronize(mgpuEventSynchronize, event));
  if (mc_disabled()) return mc_stock_event_synchronize(event);
  CHAIN_FLUSH("mgpuEventSynchronize");
  FAILED_REPORT("mgpuEventSynchronize", mc_event_synchronize(event));
}

MC_EXPORT void mgpuEventRecord(CUevent event, CUstream stream) {
  MC_TRACE_CALL(mc_trace_EventRecord(mgpuEventRecord, event, stream));
  if (mc_disabled()) return mc_stock_event_record(event, stream);
  CHAIN_FLUSH("mgpuEventRecord");
  FAILED_REPORT("mgpuEventRecord", mc_event_record(event, stream));
}

MC_EXPORT void *mgpuMemAlloc(uint64_t sizeBytes, CUstream stream, bool isHostShared) {
  MC_TRACE_CALL(mc_trace_MemAlloc(mgpuMemAlloc, sizeBytes, stream, isHostShared));
#if MC_ABI_LLVM >= 18
  /* LLVM 14-17 code passes two arguments: isHostShared is then whatever the register held. */
  int host_shared = mc_config()->ignore_host_shared ? 0 : (int)isHostShared;
#else
  (void)isHostShared; /* not passed by LLVM < 18 callers */
  int host_shared = 0;
#endif
  if (mc_disabled()) return mc_stock_mem_alloc(sizeBytes, stream, host_shared);
  CHAIN_FLUSH("mgpuMemAlloc");
  void *p = NULL;
  if (sizeBytes) {
    int device = mc_handle_device(stream);
    mc_ctx_verify(device);
    if (mc_ctx_broken(device)) { /* stock's allocation; returns what the driver wrote */
      CUdeviceptr dp = 0;
      int failed = host_shared ? FAULT_STOCK_CALL(device, "cuMemAllocManaged",
                                                  mc_cu.cuMemAllocManaged(
                                                      &dp, sizeBytes, MC_CU_MEM_ATTACH_GLOBAL))
                               : FAULT_STOCK_CALL(device, "cuMemAlloc",
                                                  mc_cu.cuMemAlloc(&dp, sizeBytes));
      if (failed) return (void *)(uintptr_t)dp;
      mc_cu.cuMemFree(dp); /* the context works again: the cached path goes on */
    }
  }
  return FAILED_REPORT("mgpuMemAlloc", mc_mem_alloc(sizeBytes, stream, host_shared, &p)) ? NULL : p;
}

MC_EXPORT void mgpuMemFree(void *ptr, CUstream stream) {
  MC_TRACE_CALL(mc_trace_MemFree(mgpuMemFree, ptr, stream));
  if (mc_disabled()) return mc_stock_mem_free(ptr, stream);
  CHAIN_FLUSH("mgpuMemFree");
  if (!ptr && mc_ctx_trouble()) { /* stock's cuMemFree(0), in the caller's context as stock's */
    mc_report_cu("cuMemFree(ptr)", mc_cu.cuMemFree(0));
    return;
  }
  if (ptr && mc_ctx_trouble()) {
    int device = mc_handle_device(stream);
    /* stock's cuMemFree. It fails while the context is broken (nothing freed, reported as
     * stock's); it succeeds only in a context reset since, whose blocks the allocator forgets at
     * the recovery (context.h): either way the allocator never hands the address out again. */
    if (mc_ctx_broken(device)) {
      FAULT_STOCK_CALL(device, "cuMemFree", mc_cu.cuMemFree((CUdeviceptr)(uintptr_t)ptr));
      return;
    }
  }
  FAILED_REPORT("mgpuMemFree", mc_mem_free(ptr, stream));
}

MC_EXPORT void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, CUstream stream) {
  MC_TRACE_CALL(mc_trace_Memcpy(mgpuMemcpy, dst, src, sizeBytes, stream));
  if (mc_disabled()) return mc_stock_memcpy(dst, src, sizeBytes, stream);
  CHAIN_FLUSH("mgpuMemcpy");
  FAILED_REPORT("mgpuMemcpy", mc_memcpy(dst, src, sizeBytes, stream));
}

MC_EXPORT void mgpuMemset32(void *dst, unsigned int value, size_t count, CUstream stream) {
  MC_TRACE_CALL(mc_trace_Memset32(mgpuMemset32, dst, value, count, stream));
  if (mc_disabled()) return mc_stock_memset32(dst, value, count, stream);
  CHAIN_FLUSH("mgpuMemset32");
  FAILED_REPORT("mgpuMemset32", mc_memset32(dst, value, count, stream));
}

MC_EXPORT void mgpuMemset16(void *dst, unsigned short value, size_t count, CUstream stream) {
  MC_TRACE_CALL(mc_trace_Memset16(mgpuMemset16, dst, value, count, stream));
  if (mc_disabled()) return mc_stock_memset16(dst, value, count, stream);
  CHAIN_FLUSH("mgpuMemset16");
  FAILED_REPORT("mgpuMemset16", mc_memset16(dst, value, count, stream));
}

MC_EXPORT void mgpuMemHostRegister(void *ptr, uint64_t sizeBytes) {
  MC_TRACE_CALL(mc_trace_MemHostRegister(mgpuMemHostRegister, ptr, sizeBytes));
  if (mc_disabled()) return mc_stock_host_register(ptr, sizeBytes);
  CHAIN_FLUSH("mgpuMemHostRegister");
  FAILED_REPORT("mgpuMemHostRegister", mc_host_register(ptr, sizeBytes));
}

MC_EXPORT void mgpuMemHostRegisterMemRef(int64_t rank, void *descriptor, int64_t elementSizeBytes) {
  MC_TRACE_CALL(mc_trace_MemHostRegisterMemRef(mgpuMemHostRegisterMemRef, rank, descriptor,
                                               elementSizeBytes));
  void *ptr = NULL;
  uint64_t bytes = 0;
  mc_status st = mc_memref_dense_extent("mgpuMemHostRegisterMemRef", rank, descriptor,
                                        elementSizeBytes, &ptr, &bytes);
  if (FAILED_REPORT("mgpuMemHostRegisterMemRef", st)) return;
  mgpuMemHostRegister(ptr, bytes);
}

MC_EXPORT void mgpuMemHostUnregister(void *ptr) {
  MC_TRACE_CALL(mc_trace_MemHostUnregister(mgpuMemHostUnregister, ptr));
  if (mc_disabled()) return mc_stock_host_unregister(ptr);
  CHAIN_FLUSH("mgpuMemHostUnregister");
  FAILED_REPORT("mgpuMemHostUnregister", mc_host_unregister(ptr));
}

MC_EXPORT void mgpuMemHostUnregisterMemRef(int64_t rank, void *descriptor,
                                           int64_t elementSizeBytes) {
  MC_TRACE_CALL(mc_trace_MemHostUnregisterMemRef(mgpuMemHostUnregisterMemRef, rank, descriptor,
                                                 elementSizeBytes));
  void *ptr = NULL;
  uint64_t bytes = 0;
  mc_status st = mc_memref_dense_extent("mgpuMemHostUnregisterMemRef", rank, descriptor,
                                        elementSizeBytes, &ptr, &bytes);
  if (FAILED_REPORT("mgpuMemHostUnregisterMemRef", st)) return;
  mgpuMemHostUnregister(ptr);
}

MC_EXPORT void mgpuSetDefaultDevice(int32_t device) {
  MC_TRACE_CALL(mc_trace_SetDefaultDevice(mgpuSetDefaultDevice, device));
  mc_set_thread_device(device);
  mc_hip_set_default_device(device); /* HIP: hipSetDevice too, as the stock ROCm wrapper */
}

MC_EXPORT void mgpuLaunchKernelCooperative(CUfunction function, intptr_t gridX, intptr_t gridY,
                                           intptr_t gridZ, intptr_t clusterX, intptr_t clusterY,
                                           intptr_t clusterZ, intptr_t blockX, intptr_t blockY,
                                           intptr_t blockZ, int32_t smem, CUstream stream,
                                           void **params, void **extra) {
  MC_TRACE_CALL(mc_trace_LaunchKernelCooperative(mgpuLaunchKernelCooperative, function, gridX,
                                                 gridY, gridZ, clusterX, clusterY, clusterZ, blockX,
                                                 blockY, blockZ, smem, stream, params, extra));
  intptr_t grid[3] = {gridX, gridY, gridZ}, cluster[3] = {clusterX, clusterY, clusterZ};
  intptr_t block[3] = {blockX, blockY, blockZ};
  if (mc_disabled())
    return mc_stock_launch_ex(function, grid, cluster, block, smem, stream, params, extra, 1);
  CHAIN_FLUSH("mgpuLaunchKernelCooperative");
  mc_launch_dims d = {LAUNCH_GD(gridX, gridY, gridZ, blockX, blockY, blockZ, smem),
                      {clusterX, clusterY, clusterZ}, 1};
  FAILED_REPORT("mgpuLaunchKernelCooperative",
                mc_launch((mc_function *)function, &d, stream, params, extra));
}

MC_EXPORT void mgpuLaunchClusterKernel(CUfunction function, intptr_t clusterX, intptr_t clusterY,
                                       intptr_t clusterZ, intptr_t gridX, intptr_t gridY,
                                       intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                                       intptr_t blockZ, int32_t smem, CUstream stream,
                                       void **params, void **extra, size_t paramsCount) {
  MC_TRACE_CALL(mc_trace_LaunchClusterKernel(mgpuLaunchClusterKernel, function, clusterX, clusterY,
                                             clusterZ, gridX, gridY, gridZ, blockX, blockY, blockZ,
                                             smem, stream, params, extra, paramsCount));
  (void)paramsCount; /* callers pass 14 arguments: never read */
  intptr_t grid[3] = {gridX, gridY, gridZ}, cluster[3] = {clusterX, clusterY, clusterZ};
  intptr_t block[3] = {blockX, blockY, blockZ};
  if (mc_disabled())
    return mc_stock_launch_ex(function, grid, cluster, block, smem, stream, params, extra, 0);
  CHAIN_FLUSH("mgpuLaunchClusterKernel");
  mc_launch_dims d = {LAUNCH_GD(gridX, gridY, gridZ, blockX, blockY, blockZ, smem),
                      {clusterX, clusterY, clusterZ}, 0};
  FAILED_REPORT("mgpuLaunchClusterKernel",
                mc_launch((mc_function *)function, &d, stream, params, extra));
}

MC_EXPORT void mgpuTensorMapEncodeTiled(CUtensorMap *tensorMap, int tensorDataType,
                                        cuuint32_t tensorRank, void *globalAddress,
                                        const cuuint64_t *globalDim,
                                        const cuuint64_t *globalStrides, const cuuint32_t *boxDim,
                                        const cuuint32_t *elementStrides, int interleave,
                                        int swizzle, int l2Promotion, int oobFill) {
  MC_TRACE_CALL(mc_trace_TensorMapEncodeTiled(mgpuTensorMapEncodeTiled, tensorMap, tensorDataType,
                                              tensorRank, globalAddress, globalDim, globalStrides,
                                              boxDim, elementStrides, interleave, swizzle,
                                              l2Promotion, oobFill));
  if (mc_disabled())
    return mc_stock_tensor_map_encode_tiled(tensorMap, tensorDataType, tensorRank, globalAddress,
                                            globalDim, globalStrides, boxDim, elementStrides,
                                            interleave, swizzle, l2Promotion, oobFill);
  CHAIN_FLUSH("mgpuTensorMapEncodeTiled");
  mc_ctx_scope scope;
  mc_status st = mc_ctx_enter(mc_thread_device(), &scope);
  if (!MC_FAILED(st)) {
    if (!mc_cu.cuTensorMapEncodeTiled) {
      st = MC_FAIL("cuTensorMapEncodeTiled", MC_E_UNSUPPORTED);
    } else {
      CUresult r = mc_cu.cuTensorMapEncodeTiled(tensorMap, tensorDataType, tensorRank,
                                                globalAddress, globalDim, globalStrides, boxDim,
                                                elementStrides, interleave, swizzle, l2Promotion,
                                                oobFill);
      if (r) st = MC_FAIL("cuTensorMapEncodeTiled", r);
    }
    mc_ctx_leave(&scope);
  }
  FAILED_REPORT("mgpuTensorMapEncodeTiled", st);
}

MC_EXPORT void *mgpuTensorMapEncodeTiledMemref(int64_t tensorRank, void *rankedDescriptor,
                                               int tensorDataType, int interleave, int swizzle,
                                               int l2Promotion, int oobFill,
                                               int64_t *inputBoxDims) {
  MC_TRACE_CALL(mc_trace_TensorMapEncodeTiledMemref(mgpuTensorMapEncodeTiledMemref, tensorRank,
                                                    rankedDescriptor, tensorDataType, interleave,
                                                    swizzle, l2Promotion, oobFill, inputBoxDims));
  if (mc_disabled())
    return mc_stock_tensor_map_encode_tiled_memref(tensorRank, rankedDescriptor, tensorDataType,
                                                   interleave, swizzle, l2Promotion, oobFill,
                                                   inputBoxDims);
  mc_tmap_args a;
  mc_status st = mc_tmap_args_from_memref(tensorRank, rankedDescriptor, tensorDataType,
                                          inputBoxDims, &a);
  if (FAILED_REPORT("mgpuTensorMapEncodeTiledMemref", st)) return NULL;
  CUtensorMap map;
  memset(&map, 0, sizeof map);
  mgpuTensorMapEncodeTiled(&map, tensorDataType, a.rank, a.address, a.global_dim,
                           a.global_strides, a.box_dim, a.element_strides, interleave, swizzle,
                           l2Promotion, oobFill);
  /* A device copy of the descriptor, as the stock wrapper returns (synchronous copy). */
  mc_ctx_scope scope;
  st = mc_ctx_enter(mc_thread_device(), &scope);
  if (FAILED_REPORT("mgpuTensorMapEncodeTiledMemref", st)) return NULL;
  CUdeviceptr dmap = 0;
  CUresult r = mc_cu.cuMemAlloc(&dmap, sizeof(CUtensorMap));
  if (r == 0) {
    r = mc_cu.cuMemcpy(dmap, (CUdeviceptr)(uintptr_t)&map, sizeof(CUtensorMap));
    if (r) st = MC_FAIL("cuMemcpy", r);
  } else {
    st = MC_FAIL("cuMemAlloc", r);
  }
  mc_ctx_leave(&scope);
  if (FAILED_REPORT("mgpuTensorMapEncodeTiledMemref", st)) return NULL;
  return (void *)(uintptr_t)dmap;
}
