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
 * - Libraries (kept for callers of the library entry points; the module cache no longer uses
 *   them): HIP has no context-independent library. A "library" holds one hipModule_t per
 *   device, loaded on the current device at cuLibraryLoadData (so a bad image fails there, as
 *   hipModuleLoadData does in the stock wrapper) and on other devices when a kernel is first
 *   resolved there, from the library's own copy of the code object: the caller may free its bytes
 *   once the load returned. The copy's length comes from the code object's header (an ELF, or a
 *   clang offload bundle: mc_blob_code_object_length), and it is taken only where there is more
 *   than one device. Where the length cannot be known no copy is kept, and a load on another
 *   device fails with hipErrorNotSupported and a message saying why. A "kernel" is (library,
 *   name) with one hipFunction_t per device. Kernels are not enumerated (HIP cannot): the cache
 *   finds them by name (cuLibraryGetKernel validates the name with hipModuleGetFunction).
 *   Handles are (generation, slot) pairs, not pointers, so everything a library holds (modules,
 *   copy, kernels) is freed at cuLibraryUnload and a stale handle still fails cleanly.
 * - Streams: the flags are the backend's choice (config.h): blocking by default, as the stock
 *   ROCm wrapper's hipStreamCreate, or non-blocking on request. Events keep their flags (same
 *   values). host_shared memory is hipMalloc, as in the stock wrapper, or hipMallocManaged with
 *   MGPU_CACHED_HIP_MANAGED=1. cuFuncSetAttribute is a no-op: AMD GPUs have no opt-in
 *   for dynamic shared memory (LDS); the limit reported is hipDeviceAttributeMaxSharedMemoryPerBlock.
 * - Cluster launches and tensor maps do not exist in HIP: MC_HIP_hipErrorNotSupported / NULL.
 *
 * Locking: mc_hip and the adapters in mc_cu are written once under driver.c's pthread_once.
 * g_hip.lock guards the handle table and every library's and kernel's mutable fields. It is never
 * held across a HIP call: a call that needs a library's module or copy with the lock released
 * pins the library (pins++ under the lock); cuLibraryUnload takes the library and its kernels out
 * of the table at once, and whoever drops the last pin (the unload itself if none is held)
 * unloads its modules and frees it. Racing loads of one library on one device keep the first
 * module and unload the other. The per-thread device stack of cuCtxPush/PopCurrent needs no lock.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/backend.h"
#include "support/blob.h"
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

/* ---- libraries: one module per device ---- */

typedef struct hip_kernel hip_kernel;

typedef struct hip_lib {
  unsigned char *image;  /* owned copy of the code object for loads on other devices, or NULL
                            (one device, or a length that cannot be known); immutable; freed
                            with the library */
  int first_device;      /* device loaded at creation; immutable */
  uintptr_t handle;      /* its handle; immutable */
  hipModule_t mod[MC_HIP_MAX_DEVICES]; /* per device; under g_hip.lock */
  hip_kernel *kernels;   /* its kernels; under g_hip.lock */
  int pins;              /* calls using it with the lock released; under g_hip.lock */
  int unloaded;          /* cuLibraryUnload ran: out of the table, destroyed by the last unpin;
                            under g_hip.lock */
  int told;              /* the message that it cannot be loaded elsewhere was printed; under lock */
} hip_lib;

struct hip_kernel {
  hip_lib *lib;          /* owner; immutable (the kernel dies with it) */
  char *name;            /* owned; immutable */
  uintptr_t handle;      /* its handle; immutable */
  hipFunction_t fn[MC_HIP_MAX_DEVICES]; /* per device; under g_hip.lock */
  hip_kernel *next;      /* in lib->kernels; under g_hip.lock */
};

/* Handles. A CUlibrary or CUkernel is not a pointer but (generation << 32) | (slot + 1) in this
 * table, so the handle of an unloaded library or of one of its kernels fails as stale
 * (hipErrorInvalidHandle) instead of reaching freed memory, while the memory itself is freed at
 * unload: a program that loads and unloads per launch keeps no per-load state. Generations come
 * from one counter that is never reset (not even in a fork child), so no handle is valid twice. */
_Static_assert(sizeof(uintptr_t) == 8, "handles need 64-bit pointers");

typedef struct hip_slot {
  void *obj;          /* hip_lib or hip_kernel; NULL when free */
  uint32_t gen;       /* generation of the handle that names obj */
  uint32_t next_free; /* when free: index + 1 of the next free slot (0 ends the list) */
  int is_kernel;      /* obj is a hip_kernel */
} hip_slot;

static struct {
  pthread_mutex_t lock; /* guards this table and every field marked "under g_hip.lock" */
  hip_slot *slots;      /* [cap]; grown under lock */
  uint32_t cap;
  uint32_t free_head;   /* index + 1 of the first free slot, 0 if none */
  uint32_t gen;         /* last generation handed out; never reset */
} g_hip = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0};

/* A new handle for obj, or 0 if memory ran out. Lock held. */
static uintptr_t slot_insert_locked(void *obj, int is_kernel) {
  if (!g_hip.free_head) {
    uint32_t old = g_hip.cap, cap = old ? old * 2 : 64;
    hip_slot *s = cap > old ? realloc(g_hip.slots, (size_t)cap * sizeof *s) : NULL;
    if (!s) return 0;
    for (uint32_t i = old; i < cap; ++i) s[i] = (hip_slot){NULL, 0, i + 1 < cap ? i + 2 : 0, 0};
    g_hip.slots = s;
    g_hip.cap = cap;
    g_hip.free_head = old + 1;
  }
  uint32_t i = g_hip.free_head - 1;
  g_hip.free_head = g_hip.slots[i].next_free;
  if (++g_hip.gen == 0) g_hip.gen = 1;
  g_hip.slots[i] = (hip_slot){obj, g_hip.gen, 0, is_kernel};
  return ((uintptr_t)g_hip.gen << 32) | (uintptr_t)(i + 1);
}

/* The live object a handle names, or NULL (never made, stale, or of the other kind). Lock held. */
static void *slot_lookup_locked(const void *handle, int is_kernel) {
  uintptr_t h = (uintptr_t)handle;
  uint32_t i = (uint32_t)h;
  if (!i || i > g_hip.cap) return NULL;
  hip_slot *s = &g_hip.slots[i - 1];
  return (s->obj && s->gen == (uint32_t)(h >> 32) && s->is_kernel == is_kernel) ? s->obj : NULL;
}

static void slot_remove_locked(uintptr_t h) {
  uint32_t i = (uint32_t)h - 1;
  g_hip.slots[i].obj = NULL;
  g_hip.slots[i].next_free = g_hip.free_head;
  g_hip.free_head = i + 1;
}

static void lib_free(hip_lib *lib) {
  for (hip_kernel *k = lib->kernels, *next; k; k = next) {
    next = k->next;
    free(k->name);
    free(k);
  }
  free(lib->image);
  free(lib);
}

/* Unload a library's modules and free it. Out of the table and unpinned: nobody else reaches it.
 * Returns the first failure of hipModuleUnload. No lock. */
static hipError_t lib_destroy(hip_lib *lib) {
  hipError_t first = 0;
  for (int d = 0; d < MC_HIP_MAX_DEVICES; ++d) {
    if (!lib->mod[d]) continue;
    hipError_t r = mc_hip.hipModuleUnload(lib->mod[d]);
    if (r && !first) first = r;
  }
  lib_free(lib);
  return first;
}

/* Drop a pin; the last one of an unloaded library destroys it. Lock held; released on return. */
static void unpin_and_unlock(hip_lib *lib) {
  int last = --lib->pins == 0 && lib->unloaded;
  pthread_mutex_unlock(&g_hip.lock);
  if (last) lib_destroy(lib);
}

static int current_device(int *dev) {
  hipError_t r = mc_hip.hipGetDevice(dev);
  if (r) return r;
  return (*dev < 0 || *dev >= MC_HIP_MAX_DEVICES) ? MC_HIP_hipErrorInvalidDevice : 0;
}

/* Devices, asked once: with one there is no other device to load a library on, so no copy. */
static int device_count_once(void) {
  static int n = -1; /* atomic */
  int v = __atomic_load_n(&n, __ATOMIC_ACQUIRE);
  if (v < 0) {
    v = mc_hip_device_count();
    __atomic_store_n(&n, v, __ATOMIC_RELEASE);
  }
  return v;
}

/* The library's module on `dev` (the current device), loading it there from the library's copy
 * if needed. Lock held on entry and on return, released across hipModuleLoadData (and the
 * hipModuleUnload of a module that lost a race to another thread's), so lib must be pinned. */
static hipError_t lib_module_locked(hip_lib *lib, int dev, hipModule_t *out) {
  if (!lib->mod[dev] && !lib->unloaded) {
    if (!lib->image) {
      if (!lib->told)
        mc_message("a code object loaded on HIP device %d cannot be loaded on device %d: its "
                   "length is not known (not an ELF or offload bundle whose header gives it, or "
                   "a compressed bundle of version 1), so no copy was kept, and the caller's "
                   "bytes may be gone; load it with device %d current",
                   lib->first_device, dev, dev);
      lib->told = 1;
      return MC_HIP_hipErrorNotSupported;
    }
    pthread_mutex_unlock(&g_hip.lock);
    hipModule_t m = NULL;
    hipError_t r = mc_hip.hipModuleLoadData(&m, lib->image); /* immutable while pinned */
    pthread_mutex_lock(&g_hip.lock);
    if (r) return r;
    if (lib->mod[dev]) { /* another thread loaded it meanwhile: keep one */
      pthread_mutex_unlock(&g_hip.lock);
      mc_hip.hipModuleUnload(m);
      pthread_mutex_lock(&g_hip.lock);
    } else {
      lib->mod[dev] = m; /* unloaded with the library, even if that happened meanwhile */
    }
  }
  if (lib->unloaded) return MC_HIP_hipErrorInvalidHandle;
  *out = lib->mod[dev];
  return 0;
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
  hipModule_t m = NULL;
  r = mc_hip.hipModuleLoadData(&m, code); /* a bad image fails here, as in the stock path */
  if (r) return r;
  hip_lib *lib = calloc(1, sizeof *lib);
  if (!lib) {
    mc_hip.hipModuleUnload(m);
    return MC_HIP_hipErrorOutOfMemory;
  }
  lib->first_device = dev;
  lib->mod[dev] = m;
  /* For the loads on other devices: our own copy, measured only once the runtime accepted the
   * bytes (the caller may free them as soon as this returns). */
  if (device_count_once() > 1) {
    size_t len = mc_blob_code_object_length(code);
    if (len && (lib->image = malloc(len)) != NULL) memcpy(lib->image, code, len);
  }
  pthread_mutex_lock(&g_hip.lock);
  lib->handle = slot_insert_locked(lib, 0);
  pthread_mutex_unlock(&g_hip.lock);
  if (!lib->handle) {
    lib_destroy(lib);
    return MC_HIP_hipErrorOutOfMemory;
  }
  *library = (CUlibrary)lib->handle;
  return 0;
}

static CUresult a_cuLibraryUnload(CUlibrary library) {
  pthread_mutex_lock(&g_hip.lock);
  hip_lib *lib = slot_lookup_locked(library, 0);
  if (!lib) {
    pthread_mutex_unlock(&g_hip.lock);
    return MC_HIP_hipErrorInvalidHandle;
  }
  slot_remove_locked(lib->handle); /* its handles fail from now on */
  for (hip_kernel *k = lib->kernels; k; k = k->next) slot_remove_locked(k->handle);
  lib->unloaded = 1;
  int now = lib->pins == 0; /* else the last call still using it destroys it */
  pthread_mutex_unlock(&g_hip.lock);
  return now ? lib_destroy(lib) : 0;
}

static hip_kernel *find_kernel_locked(hip_lib *lib, const char *name) {
  for (hip_kernel *k = lib->kernels; k; k = k->next)
    if (strcmp(k->name, name) == 0) return k;
  return NULL;
}

static CUresult a_cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name) {
  if (!library || !name) return MC_HIP_hipErrorInvalidValue;
  pthread_mutex_lock(&g_hip.lock);
  hip_lib *lib = slot_lookup_locked(library, 0);
  if (!lib) {
    pthread_mutex_unlock(&g_hip.lock);
    return MC_HIP_hipErrorInvalidHandle;
  }
  hip_kernel *k = find_kernel_locked(lib, name);
  if (k) {
    *pKernel = (CUkernel)k->handle;
    pthread_mutex_unlock(&g_hip.lock);
    return 0;
  }
  lib->pins++;
  int dev = lib->first_device;
  hipModule_t m = lib->mod[dev]; /* loaded at creation, unloaded only when destroyed */
  pthread_mutex_unlock(&g_hip.lock);
  hipFunction_t f = NULL;
  hipError_t r = mc_hip.hipModuleGetFunction(&f, m, name); /* unknown names fail here, as in the
                                                              stock path */
  pthread_mutex_lock(&g_hip.lock);
  if (!r && lib->unloaded) r = MC_HIP_hipErrorInvalidHandle;
  if (!r && (k = find_kernel_locked(lib, name)) == NULL) { /* else another thread made it */
    k = calloc(1, sizeof *k);
    char *copy = strdup(name);
    if (k && copy) {
      k->lib = lib;
      k->name = copy;
      k->fn[dev] = f;
      k->handle = slot_insert_locked(k, 1);
    }
    if (!k || !copy || !k->handle) {
      free(k);
      free(copy);
      k = NULL;
      r = MC_HIP_hipErrorOutOfMemory;
    } else {
      k->next = lib->kernels;
      lib->kernels = k;
    }
  }
  if (!r) *pKernel = (CUkernel)k->handle;
  unpin_and_unlock(lib);
  return r;
}

static CUresult a_cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel) {
  int dev = 0;
  hipError_t r = current_device(&dev);
  if (r) return r;
  pthread_mutex_lock(&g_hip.lock);
  hip_kernel *k = slot_lookup_locked(kernel, 1);
  if (!k) {
    pthread_mutex_unlock(&g_hip.lock);
    return MC_HIP_hipErrorInvalidHandle;
  }
  hipFunction_t f = k->fn[dev];
  if (f) {
    pthread_mutex_unlock(&g_hip.lock);
    *pFunc = (CUfunction)f;
    return 0;
  }
  hip_lib *lib = k->lib; /* k lives as long as lib, which the pin keeps */
  lib->pins++;
  hipModule_t m = NULL;
  r = lib_module_locked(lib, dev, &m);
  if (!r) {
    pthread_mutex_unlock(&g_hip.lock);
    r = mc_hip.hipModuleGetFunction(&f, m, k->name);
    pthread_mutex_lock(&g_hip.lock);
    if (!r && lib->unloaded) r = MC_HIP_hipErrorInvalidHandle;
    if (!r && !k->fn[dev]) k->fn[dev] = f;
    if (!r) f = k->fn[dev];
  }
  unpin_and_unlock(lib);
  if (!r) *pFunc = (CUfunction)f;
  return r;
}

static CUresult a_cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
                                     const char *name) {
  int dev = 0;
  hipError_t r = current_device(&dev);
  if (r) return r;
  pthread_mutex_lock(&g_hip.lock);
  hip_lib *lib = slot_lookup_locked(library, 0);
  if (!lib) {
    pthread_mutex_unlock(&g_hip.lock);
    return MC_HIP_hipErrorInvalidHandle;
  }
  lib->pins++;
  hipModule_t m = NULL;
  r = lib_module_locked(lib, dev, &m);
  if (!r) {
    pthread_mutex_unlock(&g_hip.lock);
    r = a_cuModuleGetGlobal(dptr, bytes, (CUmodule)m, name);
    pthread_mutex_lock(&g_hip.lock);
  }
  unpin_and_unlock(lib);
  return r;
}

/* ---- fork (wired to pthread_atfork by the library) ---- */

void mc_hip_fork_prepare(void) { pthread_mutex_lock(&g_hip.lock); }

void mc_hip_fork_parent(void) { pthread_mutex_unlock(&g_hip.lock); }

void mc_hip_fork_child(void) {
  /* The parent's libraries are forgotten: their memory freed, no HIP call (their modules belong
   * to the parent's runtime). Their handles fail as stale here: generations are not reset. A
   * library that was unloaded while pinned is out of the table; it is simply not freed. */
  for (uint32_t i = 0; i < g_hip.cap; ++i)
    if (g_hip.slots[i].obj && !g_hip.slots[i].is_kernel) lib_free(g_hip.slots[i].obj);
  free(g_hip.slots);
  g_hip.slots = NULL;
  g_hip.cap = g_hip.free_head = 0;
  pthread_mutex_init(&g_hip.lock, NULL);
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
  /* cuTensorMapEncodeTiled, cuLibraryGetKernelCount, cuLibraryEnumerateKernels, cuKernelGetName:
   * none in HIP; left NULL (optional entries). */
  cu->cuLibraryLoadData = a_cuLibraryLoadData;
  cu->cuLibraryUnload = a_cuLibraryUnload;
  cu->cuLibraryGetKernel = a_cuLibraryGetKernel;
  cu->cuKernelGetFunction = a_cuKernelGetFunction;
  extra->cuModuleGetGlobal = a_cuModuleGetGlobal;
  extra->cuLibraryGetGlobal = a_cuLibraryGetGlobal;
  extra->cuMemHostGetDevicePointer = a_cuMemHostGetDevicePointer;
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
    {"cuModuleLoadDataEx", "hipModuleLoadData"},
    {"cuModuleLoadData", "hipModuleLoadData"},
    {"cuModuleUnload", "hipModuleUnload"},
    {"cuModuleGetFunction", "hipModuleGetFunction"},
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
    const char *hip = k_call_names[i][1];
    if (strcmp(hip, "hipMallocManaged") == 0 && !mc_config()->hip_managed) hip = "hipMalloc";
    snprintf(buf, size, "%s%s", hip, call + n);
    return buf;
  }
  return call;
}
