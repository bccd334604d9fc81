/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* backend_hip.c - the HIP backend: loads the HIP runtime (libamdhip64.so) at run time and fills
 * the CUDA-shaped entry-point table mc_cu (driver.h) with small adapters over it, so that the
 * module cache, the pools, launches and memory work unchanged on AMD GPUs (see backend.h).
 *
 * Translation rules:
 * - Results: a hipError_t passes through unchanged. The codes the core tests (success, not ready,
 *   deinitialized, ...) have the same values in HIP and CUDA (checked by tests/conformance), and
 *   cuGetErrorName becomes hipGetErrorName, so reports name HIP errors ('hipErrorInvalidImage').
 * - Contexts become devices: a "context" is the device ordinal + 1; cuCtxGetCurrent is
 *   hipGetDevice, cuCtxPushCurrent saves the caller's device on a per-thread stack and calls
 *   hipSetDevice, cuCtxPopCurrent restores it. The caller's current device is therefore the same
 *   after every mgpu* call as before it, as with CUDA contexts.
 * - Modules: the module cache (module_cache.c) uses the module adapters (cuModuleLoadData,
 *   cuModuleGetFunction, cuModuleUnload, cuModuleGetGlobal: hipModule* on the current device),
 *   one module per device, as on CUDA; cuModuleLoadDataEx with JIT options (mgpuModuleLoadJIT)
 *   fails with hipErrorNotSupported (no JIT in HIP), without a HIP call.
 * - Streams: the flags are the backend's choice (config.h): blocking by default, as the stock
 *   ROCm wrapper's hipStreamCreate, or non-blocking on request. Events keep their flags (same
 *   values). host_shared memory is hipMalloc, as in the stock wrapper, or hipMallocManaged with
 *   MGPU_CACHED_HIP_MANAGED=1. cuFuncSetAttribute is a no-op: AMD GPUs have no opt-in
 *   for dynamic shared memory (LDS); the limit reported is hipDeviceAttributeMaxSharedMemoryPerBlock.
 * - Cluster launches and tensor maps do not exist in HIP: MC_HIP_hipErrorNotSupported / NULL.
 *
 * Locking: mc_hip and the adapters in mc_cu are written once under driver.c's pthread_once; the
 * adapters keep no state but the per-thread device stack of cuCtxPush/PopCurrent, which needs no
 * lock (and nothing at fork).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/backend.h"
#include "support/config.h"
#include "platform/driver.h"
#include "support/report.h"

#define MC_HIP_MAX_DEVICES 64
#define MC_HIP_CTX_DEPTH 16

mc_hip_fns mc_hip; /* written once under driver.c's pthread_once */

/* ---- loading ---- */

int mc_hip_open(const char *path, void **handle, char *err, size_t size) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = dlerror();
    snprintf(err, size, "cannot load the HIP runtime '%s': %s", path, e ? e : "unknown error");
    return -1;
  }
#define MC_RESOLVE_HIP(name, ret, params, args, required, since)                                  \
  mc_hip.name = (ret(*) params)dlsym(lib, #name);                                                  \
  if (!mc_hip.name && (required)) {                                                                \
    snprintf(err, size, "the HIP runtime '%s' has no entry point '%s'", path, #name);             \
    memset(&mc_hip, 0, sizeof mc_hip);                                                             \
    dlclose(lib);                                                                                  \
    return -1;                                                                                     \
  }
  MC_HIP_SYMBOLS(MC_RESOLVE_HIP)
#undef MC_RESOLVE_HIP
  *handle = lib;
  return 0;
}

int mc_hip_device_count(void) {
  int n = 0;
  if (!mc_hip.hipGetDeviceCount || mc_hip.hipGetDeviceCount(&n) != 0) return 0;
  return n;
}

/* ---- devices and "contexts" ---- */

static _Thread_local int tl_saved[MC_HIP_CTX_DEPTH]; /* devices saved by push, per thread */
static _Thread_local int tl_hip_depth;

#define CTX_OF(dev) ((CUcontext)(uintptr_t)((dev) + 1))
#define DEV_OF(ctx) ((int)(uintptr_t)(ctx)-1)

static CUresult a_cuGetErrorName(CUresult error, const char **pStr) {
  const char *s = mc_hip.hipGetErrorName(error);
  *pStr = s;
  return s ? 0 : MC_HIP_hipErrorInvalidValue;
}
static CUresult a_cuInit(unsigned int flags) { return mc_hip.hipInit(flags); }
static CUresult a_cuDriverGetVersion(int *v) { return mc_hip.hipDriverGetVersion(v); }
static CUresult a_cuDeviceGetCount(int *count) { return mc_hip.hipGetDeviceCount(count); }
static CUresult a_cuDeviceGet(CUdevice *device, int ordinal) {
  int n = 0;
  hipError_t r = mc_hip.hipGetDeviceCount(&n);
  if (r) return r;
  if (ordinal < 0 || ordinal >= n) return MC_HIP_hipErrorInvalidDevice;
  *device = ordinal;
  return 0;
}
static CUresult a_cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
  if (attrib != MC_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
    return MC_HIP_hipErrorInvalidValue;
  return mc_hip.hipDeviceGetAttribute(pi, MC_HIP_hipDeviceAttributeMaxSharedMemoryPerBlock, dev);
}
static CUresult a_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  if (dev < 0 || dev >= MC_HIP_MAX_DEVICES) return MC_HIP_hipErrorInvalidDevice;
  *pctx = CTX_OF(dev);
  return 0;
}
static CUresult a_cuCtxGetCurrent(CUcontext *pctx) {
  int d = 0;
  hipError_t r = mc_hip.hipGetDevice(&d);
  if (r) return r;
  *pctx = CTX_OF(d);
  return 0;
}
static CUresult a_cuCtxPushCurrent(CUcontext ctx) {
  if (!ctx || tl_hip_depth >= MC_HIP_CTX_DEPTH) return MC_HIP_hipErrorInvalidContext;
  int cur = 0;
  hipError_t r = mc_hip.hipGetDevice(&cur);
  if (!r) r = mc_hip.hipSetDevice(DEV_OF(ctx));
  if (r) return r;
  tl_saved[tl_hip_depth++] = cur;
  return 0;
}
static CUresult a_cuCtxPopCurrent(CUcontext *pctx) {
  if (!tl_hip_depth) return MC_HIP_hipErrorInvalidContext;
  int cur = 0;
  mc_hip.hipGetDevice(&cur);
  if (pctx) *pctx = CTX_OF(cur);
  return mc_hip.hipSetDevice(tl_saved[--tl_hip_depth]);
}

/* ---- modules (the stock-shaped CUDA entry points; the HIP stock path calls HIP directly) ---- */

static CUresult a_cuModuleLoadData(CUmodule *module, const void *image) {
  return mc_hip.hipModuleLoadData((hipModule_t *)module, image);
}
static CUresult a_cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int n,
                                     CUjit_option *o, void **v) {
  (void)o, (void)v;
  if (n) return MC_HIP_hipErrorNotSupported; /* mgpuModuleLoadJIT: no JIT in HIP (stock: null) */
  return mc_hip.hipModuleLoadData((hipModule_t *)module, image);
}
static CUresult a_cuModuleUnload(CUmodule m) { return mc_hip.hipModuleUnload((hipModule_t)m); }
static CUresult a_cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
  return mc_hip.hipModuleGetFunction((hipFunction_t *)f, (hipModule_t)m, name);
}
static CUresult a_cuModuleGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUmodule m,
                                    const char *name) {
  hipDeviceptr_t p = NULL;
  hipError_t r = mc_hip.hipModuleGetGlobal(&p, bytes, (hipModule_t)m, name);
  if (!r && dptr) *dptr = (CUdeviceptr)(uintptr_t)p;
  return r;
}
static CUresult a_cuFuncSetAttribute(CUfunction f, CUfunction_attribute attrib, int value) {
  (void)f, (void)attrib, (void)value; /* no dynamic-LDS opt-in on AMD GPUs */
  return 0;
}

/* ---- launches ---- */

static CUresult a_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                 unsigned by, unsigned bz, unsigned smem, CUstream s,
                                 void **params, void **extra) {
  return mc_hip.hipModuleLaunchKernel((hipFunction_t)f, gx, gy, gz, bx, by, bz, smem,
                                      (hipStream_t)s, params, extra);
}

static CUresult a_cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params,
                                   void **extra) {
  int cooperative = 0;
  for (unsigned i = 0; i < c->numAttrs; ++i) {
    if (c->attrs[i].id == MC_CU_LAUNCH_ATTRIBUTE_COOPERATIVE) cooperative = c->attrs[i].value.cooperative;
    else return MC_HIP_hipErrorNotSupported; /* thread-block clusters: not in HIP */
  }
  if (!cooperative)
    return a_cuLaunchKernel(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
                            c->blockDimZ, c->sharedMemBytes, c->hStream, params, extra);
  if (!mc_hip.hipModuleLaunchCooperativeKernel || extra) return MC_HIP_hipErrorNotSupported;
  return mc_hip.hipModuleLaunchCooperativeKernel((hipFunction_t)f, c->gridDimX, c->gridDimY,
                                                 c->gridDimZ, c->blockDimX, c->blockDimY,
                                                 c->blockDimZ, c->sharedMemBytes,
                                                 (hipStream_t)c->hStream, params);
}

/* ---- streams and events ---- */

static CUresult a_cuStreamCreate(CUstream *ps, unsigned int flags) {
  (void)flags; /* the backend's documented choice, not the CUDA path's */
  unsigned hip_flags =
      mc_config()->hip_nonblocking ? MC_HIP_hipStreamNonBlocking : MC_HIP_hipStreamDefault;
  return mc_hip.hipStreamCreateWithFlags((hipStream_t *)ps, hip_flags);
}
static CUresult a_cuStreamDestroy(CUstream s) { return mc_hip.hipStreamDestroy((hipStream_t)s); }
static CUresult a_cuStreamSynchronize(CUstream s) {
  return mc_hip.hipStreamSynchronize((hipStream_t)s);
}
static CUresult a_cuStreamQuery(CUstream s) { return mc_hip.hipStreamQuery((hipStream_t)s); }
static CUresult a_cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) {
  return mc_hip.hipStreamWaitEvent((hipStream_t)s, (hipEvent_t)e, flags);
}
static CUresult a_cuEventCreate(CUevent *pe, unsigned int flags) {
  return mc_hip.hipEventCreateWithFlags((hipEvent_t *)pe, flags); /* same flag values */
}
static CUresult a_cuEventDestroy(CUevent e) { return mc_hip.hipEventDestroy((hipEvent_t)e); }
static CUresult a_cuEventRecord(CUevent e, CUstream s) {
  return mc_hip.hipEventRecord((hipEvent_t)e, (hipStream_t)s);
}
static CUresult a_cuEventSynchronize(CUevent e) {
  return mc_hip.hipEventSynchronize((hipEvent_t)e);
}
static CUresult a_cuEventQuery(CUevent e) { return mc_hip.hipEventQuery((hipEvent_t)e); }

/* ---- memory ---- */

#define DPTR(p) ((void *)(uintptr_t)(p))

static CUresult a_cuMemAlloc(CUdeviceptr *dptr, size_t bytes) {
  void *p = NULL;
  hipError_t r = mc_hip.hipMalloc(&p, bytes);
  if (!r) *dptr = (CUdeviceptr)(uintptr_t)p;
  return r;
}
/* host_shared: hipMalloc by default, as the stock ROCm wrapper (managed memory on a GPU without
 * XNACK is fine-grained host memory: slower, and some floating-point atomics are unsafe on it);
 * hipMallocManaged with MGPU_CACHED_HIP_MANAGED=1, falling back to hipMalloc where the device
 * cannot do managed memory. */
static CUresult a_cuMemAllocManaged(CUdeviceptr *dptr, size_t bytes, unsigned int flags) {
  (void)flags;
  void *p = NULL;
  hipError_t r = MC_HIP_hipErrorNotSupported;
  if (mc_config()->hip_managed) r = mc_hip.hipMallocManaged(&p, bytes, MC_HIP_hipMemAttachGlobal);
  if (r == MC_HIP_hipErrorNotSupported) r = mc_hip.hipMalloc(&p, bytes); /* the stock behaviour */
  if (!r) *dptr = (CUdeviceptr)(uintptr_t)p;
  return r;
}
static CUresult a_cuMemFree(CUdeviceptr p) { return mc_hip.hipFree(DPTR(p)); }
static CUresult a_cuCtxSynchronize(void) { return mc_hip.hipDeviceSynchronize(); }
static CUresult a_cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return mc_hip.hipMemcpy(DPTR(dst), DPTR(src), n, MC_HIP_hipMemcpyDefault);
}
static CUresult a_cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return mc_hip.hipMemcpyAsync(DPTR(dst), DPTR(src), n, MC_HIP_hipMemcpyDefault, (hipStream_t)s);
}
static CUresult a_cuMemsetD32Async(CUdeviceptr dst, unsigned int ui, size_t n, CUstream s) {
  return mc_hip.hipMemsetD32Async(DPTR(dst), (int)ui, n, (hipStream_t)s);
}
static CUresult a_cuMemsetD16Async(CUdeviceptr dst, unsigned short us, size_t n, CUstream s) {
  return mc_hip.hipMemsetD16Async(DPTR(dst), us, n, (hipStream_t)s);
}
static CUresult a_cuMemHostRegister(void *p, size_t bytes, unsigned int flags) {
  return mc_hip.hipHostRegister(p, bytes, flags);
}
static CUresult a_cuMemHostUnregister(void *p) { return mc_hip.hipHostUnregister(p); }
static CUresult a_cuMemHostGetDevicePointer(CUdeviceptr *pd, void *p, unsigned int flags) {
  void *d = NULL;
  hipError_t r = mc_hip.hipHostGetDevicePointer(&d, p, flags);
  if (!r) *pd = (CUdeviceptr)(uintptr_t)d;
  return r;
}

void mc_hip_install_adapters(mc_cuda_fns *cu, mc_cuda_extra_fns *extra) {
  memset(cu, 0, sizeof *cu);
  memset(extra, 0, sizeof *extra);
  cu->cuGetErrorName = a_cuGetErrorName;
  cu->cuInit = a_cuInit;
  cu->cuDriverGetVersion = a_cuDriverGetVersion;
  cu->cuDeviceGet = a_cuDeviceGet;
  cu->cuDeviceGetCount = a_cuDeviceGetCount;
  cu->cuDeviceGetAttribute = a_cuDeviceGetAttribute;
  cu->cuDevicePrimaryCtxRetain = a_cuDevicePrimaryCtxRetain;
  cu->cuCtxGetCurrent = a_cuCtxGetCurrent;
  cu->cuCtxPushCurrent = a_cuCtxPushCurrent;
  cu->cuCtxPopCurrent = a_cuCtxPopCurrent;
  cu->cuModuleLoadData = a_cuModuleLoadData;
  cu->cuModuleLoadDataEx = a_cuModuleLoadDataEx;
  cu->cuModuleUnload = a_cuModuleUnload;
  cu->cuModuleGetFunction = a_cuModuleGetFunction;
  cu->cuFuncSetAttribute = a_cuFuncSetAttribute;
  cu->cuLaunchKernel = a_cuLaunchKernel;
  cu->cuStreamCreate = a_cuStreamCreate;
  cu->cuStreamDestroy = a_cuStreamDestroy;
  cu->cuStreamSynchronize = a_cuStreamSynchronize;
  cu->cuStreamQuery = a_cuStreamQuery;
  cu->cuStreamWaitEvent = a_cuStreamWaitEvent;
  cu->cuEventCreate = a_cuEventCreate;
  cu->cuEventDestroy = a_cuEventDestroy;
  cu->cuEventRecord = a_cuEventRecord;
  cu->cuEventSynchronize = a_cuEventSynchronize;
  cu->cuEventQuery = a_cuEventQuery;
  cu->cuMemAlloc = a_cuMemAlloc;
  cu->cuMemAllocManaged = a_cuMemAllocManaged;
  cu->cuMemFree = a_cuMemFree;
  cu->cuCtxSynchronize = a_cuCtxSynchronize;
  cu->cuMemcpy = a_cuMemcpy;
  cu->cuMemcpyAsync = a_cuMemcpyAsync;
  cu->cuMemsetD32Async = a_cuMemsetD32Async;
  cu->cuMemsetD16Async = a_cuMemsetD16Async;
  cu->cuMemHostRegister = a_cuMemHostRegister;
  cu->cuMemHostUnregister = a_cuMemHostUnregister;
  cu->cuLaunchKernelEx = a_cuLaunchKernelEx;
  /* cuTensorMapEncodeTiled and the library entry points (the module cache uses the module API):
   * left NULL (optional entries). */
  extra->cuModuleGetGlobal = a_cuModuleGetGlobal;
  extra->cuMemHostGetDevicePointer = a_cuMemHostGetDevicePointer;
}

/* ---- names for reports ---- */

static const char *const k_hip_call_names[][2] = {
    {"cuInit", "hipInit"},
    {"cuDeviceGetCount", "hipGetDeviceCount"},
    {"cuDeviceGetAttribute", "hipDeviceGetAttribute"},
    {"cuDeviceGet", "hipSetDevice"},
    {"cuDevicePrimaryCtxRetain", "hipSetDevice"},
    {"cuCtxGetCurrent", "hipGetDevice"},
    {"cuCtxPushCurrent", "hipSetDevice"},
    {"cuCtxPopCurrent", "hipSetDevice"},
    {"cuModuleLoadDataEx", "hipModuleLoadData"},
    {"cuModuleLoadData", "hipModuleLoadData"},
    {"cuModuleUnload", "hipModuleUnload"},
    {"cuModuleGetFunction", "hipModuleGetFunction"},
    {"cuModuleGetGlobal", "hipModuleGetGlobal"},
    {"cuFuncSetAttribute", "hipFuncSetAttribute"},
    {"cuLaunchKernelEx", "hipModuleLaunchCooperativeKernel"},
    {"cuLaunchKernel", "hipModuleLaunchKernel"},
    {"cuStreamCreate", "hipStreamCreateWithFlags"},
    {"cuStreamDestroy", "hipStreamDestroy"},
    {"cuStreamSynchronize", "hipStreamSynchronize"},
    {"cuStreamQuery", "hipStreamQuery"},
    {"cuStreamWaitEvent", "hipStreamWaitEvent"},
    {"cuEventCreate", "hipEventCreateWithFlags"},
    {"cuEventDestroy", "hipEventDestroy"},
    {"cuEventRecord", "hipEventRecord"},
    {"cuEventSynchronize", "hipEventSynchronize"},
    {"cuEventQuery", "hipEventQuery"},
    {"cuMemAllocManaged", "hipMallocManaged"},
    {"cuMemAlloc", "hipMalloc"},
    {"cuMemFree", "hipFree"},
    {"cuCtxSynchronize", "hipDeviceSynchronize"},
    {"cuMemcpyAsync", "hipMemcpyAsync"},
    {"cuMemcpy", "hipMemcpy"},
    {"cuMemsetD32Async", "hipMemsetD32Async"},
    {"cuMemsetD16Async", "hipMemsetD16Async"},
    {"cuMemHostRegister", "hipHostRegister"},
    {"cuMemHostUnregister", "hipHostUnregister"},
    {"cuMemHostGetDevicePointer", "hipHostGetDevicePointer"},
    {"cuTensorMapEncodeTiled", "cuTensorMapEncodeTiled (no HIP equivalent)"},
};

const char *mc_hip_call_name(const char *call, char *buf, size_t size) {
  if (!call || strncmp(call, "cu", 2) != 0) return call;
  size_t n = strcspn(call, "(");
  for (size_t i = 0; i < sizeof k_hip_call_names / sizeof *k_hip_call_names; ++i) {
    if (strlen(k_hip_call_names[i][0]) != n || strncmp(call, k_hip_call_names[i][0], n) != 0) continue;
    const char *hip = k_hip_call_names[i][1];
    if (strcmp(hip, "hipMallocManaged") == 0 && !mc_config()->hip_managed) hip = "hipMalloc";
    snprintf(buf, size, "%s%s", hip, call + n);
    return buf;
  }
  return call;
}
