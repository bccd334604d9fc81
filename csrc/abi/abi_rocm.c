/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* abi_rocm.c - the ABI edge for the mgpu* symbols that only the stock ROCm wrapper
 * (libmlir_rocm_runtime, LLVM 14-22 and 2026 main) exports, in upstream's order, with its C
 * signatures. Every other symbol of the ROCm wrapper is shared with the CUDA one (abi_cuda.c).
 *
 * They work on both backends: on HIP as the ROCm wrapper (hipModuleGetGlobal,
 * hipHostGetDevicePointer), on CUDA with the CUDA equivalents (cuLibraryGetGlobal or
 * cuModuleGetGlobal, cuMemHostGetDevicePointer). With MGPU_CACHED_DISABLE on HIP they make the
 * stock ROCm wrapper's calls (stock_hip.c), including its hipSetDevice(0).
 */
#include <stddef.h>
#include <stdint.h>

#include "platform/backend.h"
#include "support/config.h"
#include "platform/context.h"
#include "platform/driver.h"
#include "modules/module_cache.h"
#include "support/report.h"
#include "stock/stock_hip.h"
#include "abi/trace_abi.h"

#define MC_EXPORT __attribute__((visibility("default")))

MC_EXPORT void mgpuModuleGetGlobal(void **devPtr, size_t *bytes, CUmodule module,
                                   const char *name) {
  MC_TRACE_CALL(mc_trace_ModuleGetGlobal(mgpuModuleGetGlobal, devPtr, bytes, module, name));
  if (mc_disabled()) {
    if (mc_backend_is_hip()) return mc_stock_hip_module_get_global(devPtr, bytes, module, name);
    /* not in the stock CUDA wrapper: the CUDA call it would make, on a driver module */
    mc_status st = mc_driver_load();
    if (!MC_FAILED(st) && !mc_cu_extra.cuModuleGetGlobal)
      st = MC_FAIL("cuModuleGetGlobal", MC_E_UNSUPPORTED);
    if (!MC_FAILED(st)) {
      CUdeviceptr d = 0;
      CUresult r = mc_cu_extra.cuModuleGetGlobal(&d, bytes, module, name);
      if (r) st = MC_FAIL("cuModuleGetGlobal(devPtr, bytes, module, name)", r);
      else if (devPtr) *devPtr = (void *)(uintptr_t)d;
    }
    mc_report("mgpuModuleGetGlobal", st, NULL);
    return;
  }
  mc_report("mgpuModuleGetGlobal", mc_module_get_global((mc_module *)module, name, devPtr, bytes),
            NULL);
}

/* The device address of registered host memory, in the calling thread's default device. */
static void *device_pointer(void *host, const char *where) {
  if (mc_disabled() && mc_backend_is_hip()) return mc_stock_hip_device_pointer(host);
  mc_ctx_scope scope;
  mc_status st = mc_ctx_enter(mc_thread_device(), &scope);
  CUdeviceptr d = 0;
  if (!MC_FAILED(st)) {
    if (!mc_cu_extra.cuMemHostGetDevicePointer) {
      st = MC_FAIL("cuMemHostGetDevicePointer", MC_E_UNSUPPORTED);
    } else {
      CUresult r = mc_cu_extra.cuMemHostGetDevicePointer(&d, host, 0);
      if (r) st = MC_FAIL("cuMemHostGetDevicePointer", r);
    }
    mc_ctx_leave(&scope);
  }
  mc_report(where, st, NULL);
  return (void *)(uintptr_t)d;
}

MC_EXPORT mc_memref1d_f32 mgpuMemGetDeviceMemRef1dFloat(float *allocated, float *aligned,
                                                        int64_t offset, int64_t size,
                                                        int64_t stride) {
  MC_TRACE_CALL(mc_trace_MemGetDeviceMemRef1dFloat(mgpuMemGetDeviceMemRef1dFloat, allocated,
                                                   aligned, offset, size, stride));
  (void)allocated;
  float *p = device_pointer(aligned, "mgpuMemGetDeviceMemRef1dFloat");
  mc_memref1d_f32 r = {p, p, offset, {size}, {stride}};
  return r;
}

MC_EXPORT mc_memref1d_i32 mgpuMemGetDeviceMemRef1dInt32(int32_t *allocated, int32_t *aligned,
                                                        int64_t offset, int64_t size,
                                                        int64_t stride) {
  MC_TRACE_CALL(mc_trace_MemGetDeviceMemRef1dInt32(mgpuMemGetDeviceMemRef1dInt32, allocated,
                                                   aligned, offset, size, stride));
  (void)allocated;
  int32_t *p = device_pointer(aligned, "mgpuMemGetDeviceMemRef1dInt32");
  mc_memref1d_i32 r = {p, p, offset, {size}, {stride}};
  return r;
}
