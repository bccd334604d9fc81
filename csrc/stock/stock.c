/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* stock.c - the stock wrapper's behaviour, call for call (see stock.h).
 *
 * Like upstream: the first call that needs a context runs cuInit, cuDeviceGet(default device) and
 * cuDevicePrimaryCtxRetain once (the device chosen then is frozen for the process); every call that
 * upstream wraps in a ScopedContext pushes and pops that context; errors are printed and ignored.
 * The frozen context is guarded by a pthread_once; nothing else here has state.
 */
#include "stock/stock.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "support/config.h"
#include "platform/context.h"
#include "platform/backend.h"
#include "platform/driver.h"
#include "support/report.h"
#include "stock/stock_hip.h"
#include "launch/tensor_map.h"

/* On the HIP backend every entry point hands over to the stock ROCm behaviour (stock_hip.c). */
#define HIP_STOCK(call)                                                                           \
  do {                                                                                            \
    if (mc_backend_is_hip()) return call;                                                         \
  } while (0)

/* Report a driver call in upstream's form: the call's text without our "mc_cu." prefix. */
#define REPORT(expr) mc_report_cu(&#expr[sizeof "mc_cu." - 1], (int)(expr))
#define DEBUG_PRINT(...)                                                                          \
  do {                                                                                            \
    if (mc_config()->stock_debug) fprintf(stderr, __VA_ARGS__);                                   \
  } while (0)

static pthread_once_t g_ctx_once = PTHREAD_ONCE_INIT;
static CUcontext g_stock_ctx; /* the frozen primary context, written once under g_ctx_once */

/* Every entry point first makes sure the driver is there; without it there is nothing to call. */
static int have_driver(void) {
  static int reported;
  if (!MC_FAILED(mc_driver_load())) return 1;
  if (!__atomic_exchange_n(&reported, 1, __ATOMIC_RELAXED))
    mc_report("mgpu*", MC_FAIL("dlopen", MC_E_NO_DRIVER), NULL);
  return 0;
}

static CUdevice default_cu_device(void) {
  CUdevice device = 0;
  REPORT(mc_cu.cuDeviceGet(&device, /*ordinal=*/mc_thread_device()));
  return device;
}

static void init_context(void) {
  REPORT(mc_cu.cuInit(/*flags=*/0));
  CUcontext ctx = NULL;
  REPORT(mc_cu.cuDevicePrimaryCtxRetain(&ctx, default_cu_device()));
  g_stock_ctx = ctx;
}

static void scope_push(void) {
  pthread_once(&g_ctx_once, init_context);
  REPORT(mc_cu.cuCtxPushCurrent(g_stock_ctx));
}

static void scope_pop(void) { REPORT(mc_cu.cuCtxPopCurrent(NULL)); }

void mc_stock_scope_push(void) {
  if (have_driver()) scope_push();
}

void mc_stock_scope_pop(void) {
  if (mc_driver_loaded()) scope_pop();
}

CUmodule mc_stock_module_load(void *data) {
  HIP_STOCK(mc_stock_hip_module_load(data));
  if (!have_driver()) return NULL;
  scope_push();
  CUmodule module = NULL;
  REPORT(mc_cu.cuModuleLoadData(&module, data));
  scope_pop();
  return module;
}

CUmodule mc_stock_module_load_jit(void *data, int opt_level) {
  HIP_STOCK(mc_stock_hip_module_load_jit(data, opt_level));
  if (!have_driver()) return NULL;
  scope_push();
  CUmodule module = NULL;
  char error_log[4096];
  error_log[0] = 0;
  CUjit_option opts[3] = {MC_CU_JIT_ERROR_LOG_BUFFER, MC_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                          MC_CU_JIT_OPTIMIZATION_LEVEL};
  void *vals[3] = {error_log, (void *)(uintptr_t)sizeof error_log, (void *)(intptr_t)opt_level};
  CUresult r = mc_cu.cuModuleLoadDataEx(&module, data, 3, opts, vals);
  if (r != 0) {
    fprintf(stderr, "JIT compilation failed with: '%s'\n", error_log);
    mc_report_cu("cuModuleLoadDataEx(&module, data, numOptions, jitOptions, jitOptionsVals)", r);
  }
  scope_pop();
  return module;
}

void mc_stock_module_unload(CUmodule module) {
  HIP_STOCK(mc_stock_hip_module_unload(module));
  if (!have_driver()) return;
  REPORT(mc_cu.cuModuleUnload(module));
}

CUfunction mc_stock_module_get_function(CUmodule module, const char *name) {
  HIP_STOCK(mc_stock_hip_module_get_function(module, name));
  if (!have_driver()) return NULL;
  CUfunction function = NULL;
  REPORT(mc_cu.cuModuleGetFunction(&function, module, name));
  return function;
}

static void set_smem(CUfunction f, int32_t smem) {
  int32_t max_shmem = 0;
  CUdevice device = default_cu_device();
  REPORT(mc_cu.cuDeviceGet(&device, /*ordinal=*/mc_thread_device()));
  REPORT(mc_cu.cuDeviceGetAttribute(&max_shmem,
                                    MC_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                    device));
  if (max_shmem < smem)
    fprintf(stderr,
            "Requested shared memory (%dkb) is larger than maximum allowed shared memory (%dkb) "
            "for this device\n",
            smem, max_shmem);
  REPORT(mc_cu.cuFuncSetAttribute(f, MC_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem));
}

void mc_stock_launch_kernel(CUfunction f, intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx,
                            intptr_t by, intptr_t bz, int32_t smem, CUstream stream,
                            void **params, void **extra) {
  HIP_STOCK(mc_stock_hip_launch_kernel(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra));
  if (!have_driver()) return;
  scope_push();
  if (smem > 0) set_smem(f, smem);
  DEBUG_PRINT("Launching kernel, grid=%ld,%ld,%ld, threads: %ld, %ld, %ld, smem: %dkb\n", (long)gx,
              (long)gy, (long)gz, (long)bx, (long)by, (long)bz, smem);
  REPORT(mc_cu.cuLaunchKernel(f, (unsigned)gx, (unsigned)gy, (unsigned)gz, (unsigned)bx,
                              (unsigned)by, (unsigned)bz, (unsigned)smem, stream, params, extra));
  scope_pop();
}

void mc_stock_launch_ex(CUfunction f, const intptr_t grid[3], const intptr_t cluster[3],
                        const intptr_t block[3], int32_t smem, CUstream stream, void **params,
                        void **extra, int cooperative) {
  HIP_STOCK(mc_stock_hip_launch_ex(f, grid, cluster, block, smem, stream, params, extra,
                                   cooperative));
  if (!have_driver()) return;
  scope_push();
  if (smem > 0) set_smem(f, smem);
  CUlaunchConfig config;
  memset(&config, 0, sizeof config);
  config.gridDimX = (unsigned)grid[0];
  config.gridDimY = (unsigned)grid[1];
  config.gridDimZ = (unsigned)grid[2];
  config.blockDimX = (unsigned)block[0];
  config.blockDimY = (unsigned)block[1];
  config.blockDimZ = (unsigned)block[2];
  config.sharedMemBytes = (unsigned)smem;
  config.hStream = stream;
  CUlaunchAttribute attrs[3];
  memset(attrs, 0, sizeof attrs);
  unsigned n = 0;
  int has_cluster = !cooperative || (cluster[0] > 0 && cluster[1] > 0 && cluster[2] > 0);
  if (has_cluster) {
    attrs[n].id = MC_CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[n].value.clusterDim.x = (unsigned)cluster[0];
    attrs[n].value.clusterDim.y = (unsigned)cluster[1];
    attrs[n].value.clusterDim.z = (unsigned)cluster[2];
    ++n;
    attrs[n].id = MC_CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE;
    attrs[n].value.clusterSchedulingPolicyPreference = MC_CU_CLUSTER_SCHEDULING_POLICY_SPREAD;
    ++n;
  }
  if (cooperative) {
    attrs[n].id = MC_CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attrs[n].value.cooperative = 1;
    ++n;
  }
  config.attrs = attrs;
  config.numAttrs = n;
  DEBUG_PRINT("Launching kernel, cluster: %ld, %ld, %ld, grid=%ld,%ld,%ld, threads: %ld, %ld, %ld, "
              "smem: %dkb\n",
              (long)cluster[0], (long)cluster[1], (long)cluster[2], (long)grid[0], (long)grid[1],
              (long)grid[2], (long)block[0], (long)block[1], (long)block[2], smem);
  if (mc_cu.cuLaunchKernelEx)
    REPORT(mc_cu.cuLaunchKernelEx(&config, f, params, extra));
  else
    mc_report("cuLaunchKernelEx", MC_FAIL("cuLaunchKernelEx", MC_E_UNSUPPORTED), NULL);
  scope_pop();
}

CUstream mc_stock_stream_create(void) {
  HIP_STOCK(mc_stock_hip_stream_create());
  if (!have_driver()) return NULL;
  scope_push();
  CUstream stream = NULL;
  REPORT(mc_cu.cuStreamCreate(&stream, MC_CU_STREAM_NON_BLOCKING));
  scope_pop();
  return stream;
}

void mc_stock_stream_destroy(CUstream stream) {
  HIP_STOCK(mc_stock_hip_stream_destroy(stream));
  if (have_driver()) REPORT(mc_cu.cuStreamDestroy(stream));
}

void mc_stock_stream_synchronize(CUstream stream) {
  HIP_STOCK(mc_stock_hip_stream_synchronize(stream));
  if (have_driver()) REPORT(mc_cu.cuStreamSynchronize(stream));
}

void mc_stock_stream_wait_event(CUstream stream, CUevent event) {
  HIP_STOCK(mc_stock_hip_stream_wait_event(stream, event));
  if (have_driver()) REPORT(mc_cu.cuStreamWaitEvent(stream, event, /*flags=*/0));
}

CUevent mc_stock_event_create(void) {
  HIP_STOCK(mc_stock_hip_event_create());
  if (!have_driver()) return NULL;
  scope_push();
  CUevent event = NULL;
  REPORT(mc_cu.cuEventCreate(&event, MC_CU_EVENT_DISABLE_TIMING));
  scope_pop();
  return event;
}

void mc_stock_event_destroy(CUevent event) {
  HIP_STOCK(mc_stock_hip_event_destroy(event));
  if (have_driver()) REPORT(mc_cu.cuEventDestroy(event));
}

void mc_stock_event_synchronize(CUevent event) {
  HIP_STOCK(mc_stock_hip_event_synchronize(event));
  if (have_driver()) REPORT(mc_cu.cuEventSynchronize(event));
}

void mc_stock_event_record(CUevent event, CUstream stream) {
  HIP_STOCK(mc_stock_hip_event_record(event, stream));
  if (have_driver()) REPORT(mc_cu.cuEventRecord(event, stream));
}

void *mc_stock_mem_alloc(uint64_t bytes, CUstream stream, int host_shared) {
  HIP_STOCK(mc_stock_hip_mem_alloc(bytes));
  (void)stream;
  if (!have_driver()) return NULL;
  scope_push();
  CUdeviceptr ptr = 0;
  if (bytes != 0) {
    if (host_shared)
      REPORT(mc_cu.cuMemAllocManaged(&ptr, bytes, MC_CU_MEM_ATTACH_GLOBAL));
    else
      REPORT(mc_cu.cuMemAlloc(&ptr, bytes));
  }
  scope_pop();
  return (void *)(uintptr_t)ptr;
}

void mc_stock_mem_free(void *ptr, CUstream stream) {
  HIP_STOCK(mc_stock_hip_mem_free(ptr));
  (void)stream;
  if (have_driver()) mc_report_cu("cuMemFree(ptr)", mc_cu.cuMemFree((CUdeviceptr)(uintptr_t)ptr));
}

void mc_stock_memcpy(void *dst, void *src, size_t bytes, CUstream stream) {
  HIP_STOCK(mc_stock_hip_memcpy(dst, src, bytes, stream));
  if (have_driver())
    mc_report_cu("cuMemcpyAsync(dst, src, sizeBytes, stream)",
                 mc_cu.cuMemcpyAsync((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, bytes,
                                     stream));
}

void mc_stock_memset32(void *dst, unsigned int value, size_t count, CUstream stream) {
  HIP_STOCK(mc_stock_hip_memset32(dst, (int)value, count, stream));
  if (have_driver())
    mc_report_cu("cuMemsetD32Async(dst, value, count, stream)",
                 mc_cu.cuMemsetD32Async((CUdeviceptr)(uintptr_t)dst, value, count, stream));
}

void mc_stock_memset16(void *dst, unsigned short value, size_t count, CUstream stream) {
  HIP_STOCK(mc_stock_hip_memset16(dst, value, count, stream));
  if (have_driver())
    mc_report_cu("cuMemsetD16Async(dst, value, count, stream)",
                 mc_cu.cuMemsetD16Async((CUdeviceptr)(uintptr_t)dst, value, count, stream));
}

void mc_stock_host_register(void *ptr, uint64_t bytes) {
  HIP_STOCK(mc_stock_hip_host_register(ptr, bytes));
  if (!have_driver()) return;
  scope_push();
  REPORT(mc_cu.cuMemHostRegister(ptr, bytes, /*flags=*/0));
  scope_pop();
}

void mc_stock_host_unregister(void *ptr) {
  HIP_STOCK(mc_stock_hip_host_unregister(ptr));
  if (!have_driver()) return;
  scope_push();
  REPORT(mc_cu.cuMemHostUnregister(ptr));
  scope_pop();
}

static void encode_tiled(CUtensorMap *map, int data_type, uint32_t rank, void *address,
                         const uint64_t *dims, const uint64_t *strides, const uint32_t *box,
                         const uint32_t *element_strides, int interleave, int swizzle, int l2,
                         int oob) {
  if (!mc_cu.cuTensorMapEncodeTiled) {
    mc_report("mgpuTensorMapEncodeTiled",
              MC_FAIL("cuTensorMapEncodeTiled", MC_E_UNSUPPORTED), NULL);
    return;
  }
  REPORT(mc_cu.cuTensorMapEncodeTiled(map, data_type, rank, address, dims, strides, box,
                                      element_strides, interleave, swizzle, l2, oob));
  DEBUG_PRINT("Created TMA descriptor\n Addr: %p\ndata type : %d\nrank : %u\n", (void *)map,
              data_type, rank);
}

void mc_stock_tensor_map_encode_tiled(CUtensorMap *map, int data_type, uint32_t rank, void *address,
                                      const uint64_t *dims, const uint64_t *strides,
                                      const uint32_t *box, const uint32_t *element_strides,
                                      int interleave, int swizzle, int l2, int oob) {
  if (mc_backend_is_hip()) { /* not in the stock ROCm wrapper */
    fprintf(stderr, "'mgpuTensorMapEncodeTiled' failed with 'not available in HIP'\n");
    return;
  }
  if (!have_driver()) return;
  scope_push();
  encode_tiled(map, data_type, rank, address, dims, strides, box, element_strides, interleave,
               swizzle, l2, oob);
  scope_pop();
}

void *mc_stock_tensor_map_encode_tiled_memref(int64_t rank, void *descriptor, int data_type,
                                              int interleave, int swizzle, int l2, int oob,
                                              int64_t *box_dims) {
  if (mc_backend_is_hip()) { /* not in the stock ROCm wrapper */
    fprintf(stderr, "'mgpuTensorMapEncodeTiledMemref' failed with 'not available in HIP'\n");
    return NULL;
  }
  if (!have_driver()) return NULL;
  mc_tmap_args a;
  mc_status st = mc_tmap_args_from_memref(rank, descriptor, data_type, box_dims, &a);
  if (MC_FAILED(st)) {
    fprintf(stderr, "'mgpuTensorMapEncodeTiledMemref' failed with 'rank is too high'\n");
    return NULL;
  }
  CUtensorMap map;
  memset(&map, 0, sizeof map);
  scope_push();
  /* upstream calls its own mgpuTensorMapEncodeTiled here, which pushes the context once more */
  mc_stock_tensor_map_encode_tiled(&map, data_type, a.rank, a.address, a.global_dim,
                                   a.global_strides, a.box_dim, a.element_strides, interleave,
                                   swizzle, l2, oob);
  CUdeviceptr dmap = 0;
  REPORT(mc_cu.cuMemAlloc(&dmap, sizeof(CUtensorMap)));
  REPORT(mc_cu.cuMemcpy(dmap, (CUdeviceptr)(uintptr_t)&map, sizeof(CUtensorMap)));
  scope_pop();
  return (void *)(uintptr_t)dmap;
}
