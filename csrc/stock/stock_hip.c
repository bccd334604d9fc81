/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* stock_hip.c - the stock ROCm wrapper's behaviour on the HIP backend (MGPU_CACHED_DISABLE=1):
 * every mgpu* call makes the same HIP calls as upstream's RocmRuntimeWrappers.cpp (LLVM 19-22 /
 * 2026 main) and reports errors with its macro's text: "'<call text>' failed with
 * '<hipGetErrorName>'". No contexts, a blocking hipStreamCreate per stream, hipMalloc ignoring
 * isHostShared and with no size-0 check, module load and unload on every call. stock.c hands
 * over to these when the HIP backend is chosen. No state of its own.
 *
 * Two deliberate differences, both where upstream would crash or assert: mgpuModuleLoadJIT reports
 * that HIP has no JIT and returns NULL (upstream: assert, NULL under NDEBUG), and a cooperative
 * launch with cluster dimensions reports an error instead of aborting.
 */
#include "stock/stock_hip.h"

#include <stdio.h>

#include "platform/backend.h"
#include "support/report.h"

/* Report a HIP call in upstream's form: the call's text without our "mc_hip." prefix. */
#define HIP_REPORT(expr) mc_report_cu(&#expr[sizeof "mc_hip." - 1], (int)(expr))

CUmodule mc_stock_hip_module_load(void *data) {
  hipModule_t module = NULL;
  HIP_REPORT(mc_hip.hipModuleLoadData(&module, data));
  return (CUmodule)module;
}

CUmodule mc_stock_hip_module_load_jit(void *data, int opt_level) {
  (void)data, (void)opt_level;
  fprintf(stderr, "'mgpuModuleLoadJIT' failed with 'This function is not available in HIP.'\n");
  return NULL;
}

void mc_stock_hip_module_unload(CUmodule module) {
  HIP_REPORT(mc_hip.hipModuleUnload((hipModule_t)module));
}

CUfunction mc_stock_hip_module_get_function(CUmodule module, const char *name) {
  hipFunction_t function = NULL;
  HIP_REPORT(mc_hip.hipModuleGetFunction(&function, (hipModule_t)module, name));
  return (CUfunction)function;
}

void mc_stock_hip_module_get_global(void **devPtr, size_t *bytes, CUmodule module,
                                    const char *name) {
  HIP_REPORT(mc_hip.hipModuleGetGlobal(devPtr, bytes, (hipModule_t)module, name));
}

void mc_stock_hip_launch_kernel(CUfunction function, intptr_t gridX, intptr_t gridY,
                                intptr_t gridZ, intptr_t blockX, intptr_t blockY, intptr_t blockZ,
                                int32_t smem, CUstream stream, void **params, void **extra) {
  HIP_REPORT(mc_hip.hipModuleLaunchKernel((hipFunction_t)function, gridX, gridY, gridZ, blockX, blockY,
                                      blockZ, smem, (hipStream_t)stream, params, extra));
}

void mc_stock_hip_launch_ex(CUfunction function, const intptr_t grid[3], const intptr_t cluster[3],
                            const intptr_t block[3], int32_t smem, CUstream stream, void **params,
                            void **extra, int cooperative) {
  (void)extra;
  if (!cooperative) { /* mgpuLaunchClusterKernel: not in the ROCm wrapper */
    fprintf(stderr, "'mgpuLaunchClusterKernel' failed with 'not available in HIP'\n");
    return;
  }
  if (cluster[0] || cluster[1] || cluster[2]) {
    fprintf(stderr, "'mgpuLaunchKernelCooperative' failed with 'cluster dimensions are not "
                    "supported in HIP'\n");
    return;
  }
  if (!mc_hip.hipModuleLaunchCooperativeKernel) {
    fprintf(stderr, "'hipModuleLaunchCooperativeKernel' failed with 'not in this HIP runtime'\n");
    return;
  }
  HIP_REPORT(mc_hip.hipModuleLaunchCooperativeKernel((hipFunction_t)function, grid[0], grid[1], grid[2],
                                                 block[0], block[1], block[2], smem,
                                                 (hipStream_t)stream, params));
}

CUstream mc_stock_hip_stream_create(void) {
  hipStream_t stream = NULL;
  HIP_REPORT(mc_hip.hipStreamCreate(&stream));
  return (CUstream)stream;
}

void mc_stock_hip_stream_destroy(CUstream stream) {
  HIP_REPORT(mc_hip.hipStreamDestroy((hipStream_t)stream));
}

void mc_stock_hip_stream_synchronize(CUstream stream) {
  HIP_REPORT(mc_hip.hipStreamSynchronize((hipStream_t)stream));
}

void mc_stock_hip_stream_wait_event(CUstream stream, CUevent event) {
  HIP_REPORT(mc_hip.hipStreamWaitEvent((hipStream_t)stream, (hipEvent_t)event, /*flags=*/0));
}

CUevent mc_stock_hip_event_create(void) {
  hipEvent_t event = NULL;
  HIP_REPORT(mc_hip.hipEventCreateWithFlags(&event, MC_HIP_hipEventDisableTiming));
  return (CUevent)event;
}

void mc_stock_hip_event_destroy(CUevent event) { HIP_REPORT(mc_hip.hipEventDestroy((hipEvent_t)event)); }

void mc_stock_hip_event_synchronize(CUevent event) {
  HIP_REPORT(mc_hip.hipEventSynchronize((hipEvent_t)event));
}

void mc_stock_hip_event_record(CUevent event, CUstream stream) {
  HIP_REPORT(mc_hip.hipEventRecord((hipEvent_t)event, (hipStream_t)stream));
}

void *mc_stock_hip_mem_alloc(uint64_t sizeBytes) {
  void *ptr = NULL;
  HIP_REPORT(mc_hip.hipMalloc(&ptr, sizeBytes));
  return ptr;
}

void mc_stock_hip_mem_free(void *ptr) { HIP_REPORT(mc_hip.hipFree(ptr)); }

void mc_stock_hip_memcpy(void *dst, void *src, size_t sizeBytes, CUstream stream) {
  HIP_REPORT(mc_hip.hipMemcpyAsync(dst, src, sizeBytes, MC_HIP_hipMemcpyDefault, (hipStream_t)stream));
}

void mc_stock_hip_memset32(void *dst, int value, size_t count, CUstream stream) {
  HIP_REPORT(mc_hip.hipMemsetD32Async((hipDeviceptr_t)dst, value, count, (hipStream_t)stream));
}

void mc_stock_hip_memset16(void *dst, unsigned short value, size_t count, CUstream stream) {
  HIP_REPORT(mc_hip.hipMemsetD16Async((hipDeviceptr_t)dst, value, count, (hipStream_t)stream));
}

void mc_stock_hip_host_register(void *ptr, uint64_t sizeBytes) {
  HIP_REPORT(mc_hip.hipHostRegister(ptr, sizeBytes, /*flags=*/0));
}

void mc_stock_hip_host_unregister(void *ptr) { HIP_REPORT(mc_hip.hipHostUnregister(ptr)); }

void *mc_stock_hip_device_pointer(void *hostPtr) {
  void *devicePtr = NULL;
  HIP_REPORT(mc_hip.hipSetDevice(0));
  HIP_REPORT(mc_hip.hipHostGetDevicePointer((void **)&devicePtr, hostPtr, /*flags=*/0));
  return devicePtr;
}
