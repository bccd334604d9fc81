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
 * - Libraries: HIP has no context-independent library. A "library" keeps a private copy of the
 *   code object and one hipModule_t per device, loaded on the first device at cuLibraryLoadData
 *   (so a bad image fails there, as hipModuleLoadData does in the stock wrapper) and on other
 *   devices when a kernel is first resolved there. A "kernel" is (library, name) with one
 *   hipFunction_t per device. Kernels are not enumerated (HIP cannot): the cache finds them by
 *   name (cuLibraryGetKernel validates the name with hipModuleGetFunction).
 * - Streams: the flags are the backend's choice (config.h): blocking by default, as the stock
 *   ROCm wrapper's hipStreamCreate, or non-blocking on request. Events keep their flags (same
 *   values). Managed memory (isHostShared) is hipMallocManaged, falling back to hipMalloc where
 *   the device cannot do managed memory. cuFuncSetAttribute is a no-op: AMD GPUs have no opt-in
 *   for dynamic shared memory (LDS); the limit reported is hipDeviceAttributeMaxSharedMemoryPerBlock.
 * - Cluster launches and tensor maps do not exist in HIP: MC_HIP_hipErrorNotSupported / NULL.
 *
 * Locking: mc_hip and the adapters in mc_cu are written once under driver.c's pthread_once.
 * Each library's per-device modules are written under the library's mutex (the first one before
 * the library is published) and published with release stores; readers load with acquire. A
 * kernel's per-device functions take no lock: fn[first device] is written before the kernel is
 * published, the others with a release store (racing writers store the same function; the module
 * cache calls cuKernelGetFunction only under its own lock anyway).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "blob.h"
#include "config.h"
#include "driver.h"
#include "report.h"

#define MC_HIP_MAX_DEVICES 64
#define MC_HIP_CTX_DEPTH 16

mc_hip_fns mc_hip; /* written once under driver.c's pthread_once */

typedef struct hip_lib {
  pthread_mutex_t lock;                    /* guards loading into mod[] */
  unsigned char *image;                    /* owned copy of the code object (or the caller's
                                              pointer for unrecognised blobs); immutable */
  int owns_image;                          /* image is our copy; immutable */
  hipModule_t mod[MC_HIP_MAX_DEVICES];     /* per device; written under lock, release/acquire */
  int first_device;                        /* device loaded at creation; immutable */
  int unloaded;                            /* set by cuLibraryUnload, under lock */
} hip_lib;

typedef struct hip_kernel {
  hip_lib *lib;                            /* owner; immutable */
  char *name;                              /* owned; immutable */
  hipFunction_t fn[MC_HIP_MAX_DEVICES];    /* per device; no lock, release/acquire (see above) */
} hip_kernel;

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
static _Thread_local int tl_depth;

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
  if (!ctx || tl_depth >= MC_HIP_CTX_DEPTH) return MC_HIP_hipErrorInvalidContext;
  int cur = 0;
  hipError_t r = mc_hip.hipGetDevice(&cur);
  if (!r) r = mc_hip.hipSetDevice(DEV_OF(ctx));
  if (r) return r;
  tl_saved[tl_depth++] = cur;
  return 0;
}
static CUresult a_cuCtxPopCurrent(CUcontext *pctx) {
  if (!tl_depth) return MC_HIP_hipErrorInvalidContext;
  int cur = 0;
  mc_hip.hipGetDevice(&cur);
  if (pctx) *pctx = CTX_OF(cur);
  return mc_hip.hipSetDevice(tl_saved[--tl_depth]);
}

/* ---- modules (the stock-shaped CUDA entry points; the HIP stock path calls HIP directly) ---- */

static CUresult a_cuModuleLoadData(CUmodule *module, const void *image) {
  return mc_hip.hipModuleLoadData((hipModule_t *)module, image);
}
static CUresult a_cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int n,
                                     CUjit_option *o, void **v) {
  (void)n, (void)o, (void)v; /* HIP has no JIT options for code objects */
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

/* ---- libraries: one module per device ---- */

static int current_device(int *dev) {
  hipError_t r = mc_hip.hipGetDevice(dev);
  if (r) return r;
  return (*dev < 0 || *dev >= MC_HIP_MAX_DEVICES) ? MC_HIP_hipErrorInvalidDevice : 0;
}

/* The library's module on `dev` (the current device), loading it there if needed. */
static hipError_t lib_module(hip_lib *lib, int dev, hipModule_t *out) {
  hipModule_t m = __atomic_load_n(&lib->mod[dev], __ATOMIC_ACQUIRE);
  if (m) {
    *out = m;
    return 0;
  }
  pthread_mutex_lock(&lib->lock);
  hipError_t r = 0;
  m = lib->mod[dev];
  if (lib->unloaded) {
    r = MC_HIP_hipErrorInvalidHandle;
  } else if (!m) {
    r = mc_hip.hipModuleLoadData(&m, lib->image);
    if (!r) __atomic_store_n(&lib->mod[dev], m, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&lib->lock);
  if (!r) *out = m;
  return r;
}

static CUresult a_cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *o,
                                    void **ov, unsigned int no, CUlibraryOption *lo, void **lov,
                                    unsigned int nlo) {
  (void)o, (void)ov, (void)lo, (void)lov, (void)nlo;
  if (!code) return MC_HIP_hipErrorInvalidValue;
  if (no) return MC_HIP_hipErrorNotSupported; /* mgpuModuleLoadJIT: no JIT in HIP (stock: null) */
  int dev = 0;
  hipError_t r = current_device(&dev);
  if (r) return r;
  hip_lib *lib = calloc(1, sizeof *lib);
  if (!lib) return MC_HIP_hipErrorOutOfMemory;
  pthread_mutex_init(&lib->lock, NULL);
  lib->first_device = dev;
  /* Loaded from the caller's bytes first: only a code object the runtime accepted is measured
   * (mc_blob_identify trusts its header) and copied for the loads on other devices. */
  r = mc_hip.hipModuleLoadData(&lib->mod[dev], code);
  if (r) {
    pthread_mutex_destroy(&lib->lock);
    free(lib);
    return r;
  }
  size_t len = 0;
  unsigned char *copy = NULL;
  if (mc_blob_identify(code, &len) != MC_BLOB_UNKNOWN && len && (copy = malloc(len)) != NULL) {
    memcpy(copy, code, len);
    lib->image = copy;
    lib->owns_image = 1;
  } else {
    lib->image = (unsigned char *)(uintptr_t)code; /* not recognised: used where it lies */
  }
  *library = (CUlibrary)lib;
  return 0;
}

static CUresult a_cuLibraryUnload(CUlibrary library) {
  hip_lib *lib = (hip_lib *)library;
  if (!lib) return MC_HIP_hipErrorInvalidHandle;
  pthread_mutex_lock(&lib->lock);
  hipError_t first = lib->unloaded ? MC_HIP_hipErrorInvalidHandle : 0;
  if (!lib->unloaded) {
    for (int d = 0; d < MC_HIP_MAX_DEVICES; ++d) {
      if (!lib->mod[d]) continue;
      hipError_t r = mc_hip.hipModuleUnload(lib->mod[d]);
      if (r && !first) first = r;
    }
    lib->unloaded = 1;
    if (lib->owns_image) free(lib->image);
    lib->image = NULL;
  }
  pthread_mutex_unlock(&lib->lock);
  /* The struct and its kernels stay allocated: handles to them may still be tested. */
  return first;
}

static CUresult a_cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name) {
  hip_lib *lib = (hip_lib *)library;
  if (!lib || !name) return MC_HIP_hipErrorInvalidValue;
  int dev = lib->first_device;
  hipModule_t m = NULL;
  hipError_t r = lib_module(lib, dev, &m);
  if (r) return r;
  hipFunction_t f = NULL;
  r = mc_hip.hipModuleGetFunction(&f, m, name); /* unknown names fail here, as in the stock path */
  if (r) return r;
  hip_kernel *k = calloc(1, sizeof *k);
  char *copy = strdup(name);
  if (!k || !copy) {
    free(k);
    free(copy);
    return MC_HIP_hipErrorOutOfMemory;
  }
  k->lib = lib;
  k->name = copy;
  k->fn[dev] = f;
  *pKernel = (CUkernel)k;
  return 0;
}

static CUresult a_cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel) {
  hip_kernel *k = (hip_kernel *)kernel;
  if (!k) return MC_HIP_hipErrorInvalidHandle;
  int dev = 0;
  hipError_t r = current_device(&dev);
  if (r) return r;
  hipFunction_t f = __atomic_load_n(&k->fn[dev], __ATOMIC_ACQUIRE);
  if (!f) {
    hipModule_t m = NULL;
    r = lib_module(k->lib, dev, &m);
    if (!r) r = mc_hip.hipModuleGetFunction(&f, m, k->name);
    if (r) return r;
    __atomic_store_n(&k->fn[dev], f, __ATOMIC_RELEASE); /* same value if two threads race */
  }
  *pFunc = (CUfunction)f;
  return 0;
}

static CUresult a_cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
                                     const char *name) {
  hip_lib *lib = (hip_lib *)library;
  if (!lib) return MC_HIP_hipErrorInvalidHandle;
  int dev = 0;
  hipModule_t m = NULL;
  hipError_t r = current_device(&dev);
  if (!r) r = lib_module(lib, dev, &m);
  if (r) return r;
  return a_cuModuleGetGlobal(dptr, bytes, (CUmodule)m, name);
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
static CUresult a_cuMemAllocManaged(CUdeviceptr *dptr, size_t bytes, unsigned int flags) {
  (void)flags;
  void *p = NULL;
  hipError_t r = mc_hip.hipMallocManaged(&p, bytes, MC_HIP_hipMemAttachGlobal);
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

void mc_hip_install_adapters(void) {
  memset(&mc_cu, 0, sizeof mc_cu);
  memset(&mc_cu_extra, 0, sizeof mc_cu_extra);
  mc_cu.cuGetErrorName = a_cuGetErrorName;
  mc_cu.cuInit = a_cuInit;
  mc_cu.cuDriverGetVersion = a_cuDriverGetVersion;
  mc_cu.cuDeviceGet = a_cuDeviceGet;
  mc_cu.cuDeviceGetCount = a_cuDeviceGetCount;
  mc_cu.cuDeviceGetAttribute = a_cuDeviceGetAttribute;
  mc_cu.cuDevicePrimaryCtxRetain = a_cuDevicePrimaryCtxRetain;
  mc_cu.cuCtxGetCurrent = a_cuCtxGetCurrent;
  mc_cu.cuCtxPushCurrent = a_cuCtxPushCurrent;
  mc_cu.cuCtxPopCurrent = a_cuCtxPopCurrent;
  mc_cu.cuModuleLoadData = a_cuModuleLoadData;
  mc_cu.cuModuleLoadDataEx = a_cuModuleLoadDataEx;
  mc_cu.cuModuleUnload = a_cuModuleUnload;
  mc_cu.cuModuleGetFunction = a_cuModuleGetFunction;
  mc_cu.cuFuncSetAttribute = a_cuFuncSetAttribute;
  mc_cu.cuLaunchKernel = a_cuLaunchKernel;
  mc_cu.cuStreamCreate = a_cuStreamCreate;
  mc_cu.cuStreamDestroy = a_cuStreamDestroy;
  mc_cu.cuStreamSynchronize = a_cuStreamSynchronize;
  mc_cu.cuStreamQuery = a_cuStreamQuery;
  mc_cu.cuStreamWaitEvent = a_cuStreamWaitEvent;
  mc_cu.cuEventCreate = a_cuEventCreate;
  mc_cu.cuEventDestroy = a_cuEventDestroy;
  mc_cu.cuEventRecord = a_cuEventRecord;
  mc_cu.cuEventSynchronize = a_cuEventSynchronize;
  mc_cu.cuEventQuery = a_cuEventQuery;
  mc_cu.cuMemAlloc = a_cuMemAlloc;
  mc_cu.cuMemAllocManaged = a_cuMemAllocManaged;
  mc_cu.cuMemFree = a_cuMemFree;
  mc_cu.cuCtxSynchronize = a_cuCtxSynchronize;
  mc_cu.cuMemcpy = a_cuMemcpy;
  mc_cu.cuMemcpyAsync = a_cuMemcpyAsync;
  mc_cu.cuMemsetD32Async = a_cuMemsetD32Async;
  mc_cu.cuMemsetD16Async = a_cuMemsetD16Async;
  mc_cu.cuMemHostRegister = a_cuMemHostRegister;
  mc_cu.cuMemHostUnregister = a_cuMemHostUnregister;
  mc_cu.cuLaunchKernelEx = a_cuLaunchKernelEx;
  /* cuTensorMapEncodeTiled, cuLibraryGetKernelCount, cuLibraryEnumerateKernels, cuKernelGetName:
   * none in HIP; left NULL (optional entries). */
  mc_cu.cuLibraryLoadData = a_cuLibraryLoadData;
  mc_cu.cuLibraryUnload = a_cuLibraryUnload;
  mc_cu.cuLibraryGetKernel = a_cuLibraryGetKernel;
  mc_cu.cuKernelGetFunction = a_cuKernelGetFunction;
  mc_cu_extra.cuModuleGetGlobal = a_cuModuleGetGlobal;
  mc_cu_extra.cuLibraryGetGlobal = a_cuLibraryGetGlobal;
  mc_cu_extra.cuMemHostGetDevicePointer = a_cuMemHostGetDevicePointer;
}

/* ---- names for reports ---- */

static const char *const k_call_names[][2] = {
    {"cuInit", "hipInit"},
    {"cuDeviceGetCount", "hipGetDeviceCount"},
    {"cuDeviceGetAttribute", "hipDeviceGetAttribute"},
    {"cuDeviceGet", "hipSetDevice"},
    {"cuDevicePrimaryCtxRetain", "hipSetDevice"},
    {"cuCtxGetCurrent", "hipGetDevice"},
    {"cuCtxPushCurrent", "hipSetDevice"},
    {"cuCtxPopCurrent", "hipSetDevice"},
    {"cuLibraryLoadData", "hipModuleLoadData"},
    {"cuLibraryUnload", "hipModuleUnload"},
    {"cuLibraryGetKernel", "hipModuleGetFunction"},
    {"cuKernelGetFunction", "hipModuleGetFunction"},
    {"cuLibraryGetGlobal", "hipModuleGetGlobal"},
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
  for (size_t i = 0; i < sizeof k_call_names / sizeof *k_call_names; ++i) {
    if (strlen(k_call_names[i][0]) != n || strncmp(call, k_call_names[i][0], n) != 0) continue;
    snprintf(buf, size, "%s%s", k_call_names[i][1], call + n);
    return buf;
  }
  return call;
}

void mc_hip_set_default_device(int device) {
  if (!mc_backend_is_hip()) return;
  mc_report_cu("hipSetDevice(device)", mc_hip.hipSetDevice(device));
}
