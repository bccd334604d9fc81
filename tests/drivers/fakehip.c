/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* fakehip.c - a recording fake HIP runtime for the CPU tests (no AMD GPU needed).
 *
 * It exports every entry point of mgpu-cached's HIP table (csrc/platform/hip_api.h, same names as
 * libamdhip64.so) with a small, strict model: devices (FAKEHIP_DEVICES, default 1), a per-thread
 * current device, modules parsed from blobs (as fakecuda.c: kernel names follow ".entry "; a real
 * ELF code object with none accepts any name; "BAD..." fails with hipErrorInvalidImage; clang
 * offload bundles, real or the tests' stand-in, and compressed ones are read up to their extent,
 * so the bytes are read at hipModuleLoadData and only then), functions
 * per module, streams with flags and pending work, events, host-backed memory. It counts every
 * call, logs call names, and lets tests inject failures and busy streams (the same control
 * interface as fakecuda.c, so tests drive both alike). FAKEHIP_NO_MANAGED=1 makes hipMallocManaged
 * fail with hipErrorNotSupported. All state is guarded by one mutex.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../csrc/platform/hip_api.h"

#define MAXDEV 8
#define MAXK 16

enum {
#define IDX(name, ret, params, args, req, since) IDX_##name,
  MC_HIP_SYMBOLS(IDX)
#undef IDX
  NSYM
};
static const char *const k_fields[] = {
#define NAME(name, ret, params, args, req, since) #name,
    MC_HIP_SYMBOLS(NAME)
#undef NAME
};
#include "fake_recording.h"
static int fake_before_call(void) { return 0; }

struct ihipModule_t {
  int magic; /* 0x30D */
  int device;
  int nk, any_name, unloaded;
  char (*names)[64]; /* [MAXK]; freed at unload (the struct stays, so stale use is detected) */
};
struct ihipModuleSymbol_t { int magic; struct ihipModule_t *mod; int index; struct ihipModuleSymbol_t *next; };
struct ihipStream_t { int magic; int device; unsigned flags; int pending; int destroyed; };
struct ihipEvent_t { int magic; int device; unsigned flags; int destroyed; };

static int g_busy_launches;
static long g_last_launch[16];
static void *g_last_stream, *g_last_function;
static struct ihipModuleSymbol_t *g_funcs;
static _Thread_local int tl_device;
static char g_global[MAXK][64]; /* storage behind hipModuleGetGlobal */

static int ndevices(void) {
  const char *v = getenv("FAKEHIP_DEVICES");
  int n = v ? atoi(v) : 1;
  return n < 0 ? 0 : n > MAXDEV ? MAXDEV : n;
}


/* ---- test control interface (with fake_recording.h's) ---- */
EXPORT void fake_set_busy_launches(int on) { g_busy_launches = on; }
EXPORT void fake_complete(void *s) {
  pthread_mutex_lock(&g_lock);
  if (s) ((hipStream_t)s)->pending = 0;
  pthread_mutex_unlock(&g_lock);
}
/* "Contexts" are devices here: the current device + 1, as the HIP backend models them. */
EXPORT void *fake_current_context(void) { return (void *)(uintptr_t)(tl_device + 1); }
EXPORT void *fake_primary_context(int device) { return (void *)(uintptr_t)(device + 1); }
EXPORT void fake_set_current_context(void *ctx) { tl_device = ctx ? (int)(uintptr_t)ctx - 1 : 0; }
EXPORT int fake_current_device(void) { return tl_device; }
EXPORT long fake_last_launch(int i) { return (i >= 0 && i < 16) ? g_last_launch[i] : -1; }
EXPORT void *fake_last_stream(void) { return g_last_stream; }
EXPORT void *fake_last_function(void) { return g_last_function; }
EXPORT int fake_function_device(void *f) {
  struct ihipModuleSymbol_t *ff = f;
  return (ff && ff->magic == 0xF0) ? ff->mod->device : -1;
}
EXPORT int fake_function_smem_limit(void *f) { (void)f; return 0; }
EXPORT int fake_stream_flags(void *s) { return s ? (int)((hipStream_t)s)->flags : -1; }
EXPORT int fake_stream_device(void *s) { return s ? ((hipStream_t)s)->device : -1; }
EXPORT size_t fake_registered_size(void *p) { (void)p; return 0; }

/* ---- runtime entry points ---- */
EXPORT const char *hipGetErrorName(hipError_t e) {
  pthread_mutex_lock(&g_lock);
  enter_call(IDX_hipGetErrorName);
  pthread_mutex_unlock(&g_lock);
  switch (e) {
  case 0: return "hipSuccess";
  case 1: return "hipErrorInvalidValue";
  case 2: return "hipErrorOutOfMemory";
  case 3: return "hipErrorNotInitialized";
  case 100: return "hipErrorNoDevice";
  case 101: return "hipErrorInvalidDevice";
  case 200: return "hipErrorInvalidImage";
  case 201: return "hipErrorInvalidContext";
  case 400: return "hipErrorInvalidHandle";
  case 500: return "hipErrorNotFound";
  case 600: return "hipErrorNotReady";
  case 801: return "hipErrorNotSupported";
  default: return "hipErrorUnknown";
  }
}
EXPORT hipError_t hipInit(unsigned int flags) {
  BEGIN(hipInit);
  (void)flags;
  RETURN(0);
}
EXPORT hipError_t hipDriverGetVersion(int *v) {
  BEGIN(hipDriverGetVersion);
  *v = 50221153;
  RETURN(0);
}
EXPORT hipError_t hipGetDeviceCount(int *count) {
  BEGIN(hipGetDeviceCount);
  *count = ndevices();
  RETURN(ndevices() ? 0 : 100);
}
EXPORT hipError_t hipGetDevice(int *d) {
  BEGIN(hipGetDevice);
  *d = tl_device;
  RETURN(0);
}
EXPORT hipError_t hipSetDevice(int d) {
  BEGIN(hipSetDevice);
  if (d < 0 || d >= ndevices()) RETURN(101);
  tl_device = d;
  RETURN(0);
}
EXPORT hipError_t hipDeviceGetAttribute(int *pi, hipDeviceAttribute_t attr, int dev) {
  BEGIN(hipDeviceGetAttribute);
  if (dev < 0 || dev >= ndevices()) RETURN(101);
  *pi = attr == MC_HIP_hipDeviceAttributeMaxSharedMemoryPerBlock ? 65536 : 1;
  RETURN(0);
}

/* ---- code object formats: real clang offload bundles, compressed bundles (added block) ---- */
/* A real clang offload bundle (magic, u64 count, entries of u64 offset, u64 size, u64 id length
 * and the id) ends at its furthest entry; 0 if the header does not add up (the stand-in). */
static size_t bundle_extent(const unsigned char *p) {
  uint64_t n, off, size, idlen;
  memcpy(&n, p + 24, 8);
  if (n == 0 || n > 16) return 0;
  size_t pos = 32, end = 32;
  for (uint64_t i = 0; i < n; ++i) {
    memcpy(&off, p + pos, 8);
    memcpy(&size, p + pos + 8, 8);
    if (off > (1u << 24) || size > (1u << 24)) return 0;
    memcpy(&idlen, p + pos + 16, 8);
    if (idlen > 256) return 0;
    pos += 24 + (size_t)idlen;
    if (pos > end) end = pos;
    if (off + size > end) end = (size_t)(off + size);
  }
  return end;
}
/* A compressed bundle ("CCOB", u16 version, ...): its "compressed data" is text in the fake,
 * after a header of 20 (version 1), 24 (version 2) or 32 bytes (version 3). */
static size_t ccob_extent(const unsigned char *p) {
  uint16_t v;
  memcpy(&v, p + 4, 2);
  size_t header = v == 1 ? 20 : v == 2 ? 24 : 32;
  return header + strlen((const char *)p + header);
}
/* Holding loads: hipModuleLoadData on device `g_hold_device` waits (outside the fake's lock)
 * until the test lets it go, so a test can see what other threads can do meanwhile. */
static pthread_mutex_t g_hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_hold_cv = PTHREAD_COND_INITIALIZER;
static int g_hold_device = -1; /* under g_hold_lock */
static int g_held;             /* calls waiting now; under g_hold_lock */
EXPORT void fake_hold_loads(int device) {
  pthread_mutex_lock(&g_hold_lock);
  g_hold_device = device;
  pthread_cond_broadcast(&g_hold_cv);
  pthread_mutex_unlock(&g_hold_lock);
}
EXPORT int fake_held_loads(void) {
  pthread_mutex_lock(&g_hold_lock);
  int n = g_held;
  pthread_mutex_unlock(&g_hold_lock);
  return n;
}
static void wait_while_held(void) {
  pthread_mutex_lock(&g_hold_lock);
  g_held++;
  pthread_cond_broadcast(&g_hold_cv);
  while (g_hold_device >= 0 && g_hold_device == tl_device) pthread_cond_wait(&g_hold_cv, &g_hold_lock);
  g_held--;
  pthread_mutex_unlock(&g_hold_lock);
}
/* ---- end of the added block ---- */

static size_t blob_extent(const unsigned char *p) {
  /* a real bundle, else the tests' stand-in for one: 40 header bytes, then text */
  if (memcmp(p, "__CLANG_OFFLOAD_BUNDLE__", 24) == 0) {
    size_t n = bundle_extent(p);
    return n ? n : 40 + strlen((const char *)p + 40);
  }
  if (memcmp(p, "CCOB", 4) == 0) return ccob_extent(p);
  return elf_or_text_extent(p);
}

EXPORT hipError_t hipModuleLoadData(hipModule_t *module, const void *image) {
  wait_while_held();
  BEGIN(hipModuleLoadData);
  const unsigned char *p = image;
  if (!p || !module) RETURN(1);
  if (p[0] == 'B' && p[1] == 'A' && p[2] == 'D') RETURN(200);
  if (blob_extent(p) > ((size_t)1 << 24)) RETURN(200); /* a header pointing far away: rejected unread */
  hipModule_t m = calloc(1, sizeof *m);
  m->names = calloc(MAXK, sizeof *m->names);
  m->magic = 0x30D;
  m->device = tl_device;
  size_t n = blob_extent(p);
  for (size_t i = 0; i + 7 < n && m->nk < MAXK; ++i) {
    if (memcmp(p + i, ".entry ", 7) != 0) continue;
    size_t j = i + 7, k = 0;
    while (j < n && k < 63 && p[j] && p[j] != ' ' && p[j] != '\n' && p[j] != '(')
      m->names[m->nk][k++] = (char)p[j++];
    m->names[m->nk++][k] = 0;
  }
  if (!m->nk && p[0] == 0x7f) m->any_name = 1;
  if (!m->nk && !m->any_name) {
    free(m->names);
    free(m);
    RETURN(200);
  }
  remember(m);
  *module = m;
  RETURN(0);
}
static int valid_module(hipModule_t m) { return known(m) && m->magic == 0x30D && !m->unloaded; }
EXPORT hipError_t hipModuleUnload(hipModule_t m) {
  BEGIN(hipModuleUnload);
  if (!valid_module(m)) RETURN(400);
  m->unloaded = 1; /* the struct is never freed: stale use is detected */
  free(m->names);
  m->names = NULL;
  RETURN(0);
}
EXPORT hipError_t hipModuleGetFunction(hipFunction_t *f, hipModule_t m, const char *name) {
  BEGIN(hipModuleGetFunction);
  if (!valid_module(m)) RETURN(400);
  int idx = -1;
  for (int i = 0; i < m->nk; ++i)
    if (strcmp(m->names[i], name) == 0) idx = i;
  if (idx < 0 && m->any_name && m->nk < MAXK) {
    idx = m->nk++;
    snprintf(m->names[idx], sizeof m->names[idx], "%s", name);
  }
  if (idx < 0) RETURN(500);
  struct ihipModuleSymbol_t *fn = NULL;
  for (struct ihipModuleSymbol_t *x = g_funcs; x; x = x->next)
    if (x->mod == m && x->index == idx) fn = x;
  if (!fn) {
    fn = calloc(1, sizeof *fn);
    fn->magic = 0xF0;
    fn->mod = m;
    fn->index = idx;
    fn->next = g_funcs;
    g_funcs = fn;
  }
  *f = fn;
  RETURN(0);
}
EXPORT hipError_t hipModuleGetGlobal(hipDeviceptr_t *dptr, size_t *bytes, hipModule_t m,
                                     const char *name) {
  BEGIN(hipModuleGetGlobal);
  if (!valid_module(m)) RETURN(400);
  if (!name || name[0] != 'g') RETURN(500); /* globals of the model: names starting with 'g' */
  *dptr = g_global[(unsigned char)name[1] % MAXK];
  if (bytes) *bytes = sizeof g_global[0];
  RETURN(0);
}

static int valid_stream(hipStream_t s) { return known(s) && s->magic == 0x57 && !s->destroyed; }
static int launch_common(hipFunction_t f, hipStream_t s, const unsigned v[7]) {
  if (!f || f->magic != 0xF0 || f->mod->unloaded) return 400;
  if (f->mod->device != tl_device) return 400; /* a function of another device's module */
  if (s && !valid_stream(s)) return 400;
  if (s && s->device != tl_device) return 400;
  g_last_stream = s;
  g_last_function = f;
  if (s && g_busy_launches) s->pending++;
  memset(g_last_launch, 0, sizeof g_last_launch);
  for (int i = 0; i < 7; ++i) g_last_launch[i] = v[i];
  return 0;
}
EXPORT hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz,
                                        unsigned bx, unsigned by, unsigned bz, unsigned smem,
                                        hipStream_t s, void **params, void **extra) {
  BEGIN(hipModuleLaunchKernel);
  (void)params, (void)extra;
  unsigned v[7] = {gx, gy, gz, bx, by, bz, smem};
  RETURN(launch_common(f, s, v));
}
EXPORT hipError_t hipModuleLaunchCooperativeKernel(hipFunction_t f, unsigned gx, unsigned gy,
                                                   unsigned gz, unsigned bx, unsigned by,
                                                   unsigned bz, unsigned smem, hipStream_t s,
                                                   void **params) {
  BEGIN(hipModuleLaunchCooperativeKernel);
  (void)params;
  unsigned v[7] = {gx, gy, gz, bx, by, bz, smem};
  RETURN(launch_common(f, s, v));
}

static hipStream_t new_stream(unsigned flags) {
  hipStream_t s = calloc(1, sizeof *s);
  s->magic = 0x57;
  s->device = tl_device;
  s->flags = flags;
  remember(s);
  return s;
}
EXPORT hipError_t hipStreamCreate(hipStream_t *ps) {
  BEGIN(hipStreamCreate);
  *ps = new_stream(0);
  RETURN(0);
}
EXPORT hipError_t hipStreamCreateWithFlags(hipStream_t *ps, unsigned int flags) {
  BEGIN(hipStreamCreateWithFlags);
  *ps = new_stream(flags);
  RETURN(0);
}
EXPORT hipError_t hipStreamDestroy(hipStream_t s) {
  BEGIN(hipStreamDestroy);
  if (!valid_stream(s)) RETURN(400);
  s->destroyed = 1;
  RETURN(0);
}
EXPORT hipError_t hipStreamSynchronize(hipStream_t s) {
  BEGIN(hipStreamSynchronize);
  if (!s) RETURN(0);
  if (!valid_stream(s)) RETURN(400);
  s->pending = 0;
  RETURN(0);
}
/* Finish the work of every stream of the current device (the caching allocator's NULL-stream
 * free waits for the device this way). */
EXPORT hipError_t hipDeviceSynchronize(void) {
  BEGIN(hipDeviceSynchronize);
  for (int i = 0; i < g_nobjs; ++i) {
    hipStream_t s = g_objs[i];
    if (s->magic == 0x57 && s->device == tl_device) s->pending = 0;
  }
  RETURN(0);
}
EXPORT hipError_t hipStreamQuery(hipStream_t s) {
  BEGIN(hipStreamQuery);
  if (s && !valid_stream(s)) RETURN(400);
  RETURN(s && s->pending ? 600 : 0);
}
static int valid_event(hipEvent_t e) { return known(e) && e->magic == 0xE7 && !e->destroyed; }
EXPORT hipError_t hipStreamWaitEvent(hipStream_t s, hipEvent_t e, unsigned int flags) {
  BEGIN(hipStreamWaitEvent);
  (void)flags;
  if ((s && !valid_stream(s)) || !valid_event(e)) RETURN(400);
  RETURN(0);
}
EXPORT hipError_t hipEventCreateWithFlags(hipEvent_t *pe, unsigned flags) {
  BEGIN(hipEventCreateWithFlags);
  hipEvent_t e = calloc(1, sizeof *e);
  e->magic = 0xE7;
  e->device = tl_device;
  e->flags = flags;
  remember(e);
  *pe = e;
  RETURN(0);
}
EXPORT hipError_t hipEventDestroy(hipEvent_t e) {
  BEGIN(hipEventDestroy);
  if (!valid_event(e)) RETURN(400);
  e->destroyed = 1;
  RETURN(0);
}
EXPORT hipError_t hipEventRecord(hipEvent_t e, hipStream_t s) {
  BEGIN(hipEventRecord);
  if (!valid_event(e) || (s && !valid_stream(s))) RETURN(400);
  RETURN(0);
}
EXPORT hipError_t hipEventSynchronize(hipEvent_t e) {
  BEGIN(hipEventSynchronize);
  RETURN(valid_event(e) ? 0 : 400);
}
EXPORT hipError_t hipEventQuery(hipEvent_t e) {
  BEGIN(hipEventQuery);
  RETURN(valid_event(e) ? 0 : 400);
}

EXPORT hipError_t hipMalloc(void **p, size_t size) {
  BEGIN(hipMalloc);
  *p = size ? calloc(1, size) : NULL;
  RETURN(0);
}
EXPORT hipError_t hipMallocManaged(void **p, size_t size, unsigned int flags) {
  BEGIN(hipMallocManaged);
  (void)flags;
  if (getenv("FAKEHIP_NO_MANAGED")) RETURN(801);
  *p = calloc(1, size);
  RETURN(0);
}
EXPORT hipError_t hipFree(void *p) {
  BEGIN(hipFree);
  free(p);
  RETURN(0);
}
EXPORT hipError_t hipMemcpy(void *dst, const void *src, size_t n, hipMemcpyKind kind) {
  BEGIN(hipMemcpy);
  if (kind != MC_HIP_hipMemcpyDefault) RETURN(1);
  memcpy(dst, src, n);
  RETURN(0);
}
EXPORT hipError_t hipMemcpyAsync(void *dst, const void *src, size_t n, hipMemcpyKind kind,
                                 hipStream_t s) {
  BEGIN(hipMemcpyAsync);
  if (kind != MC_HIP_hipMemcpyDefault || (s && !valid_stream(s))) RETURN(1);
  memcpy(dst, src, n);
  RETURN(0);
}
EXPORT hipError_t hipMemsetD32Async(hipDeviceptr_t dst, int value, size_t count, hipStream_t s) {
  BEGIN(hipMemsetD32Async);
  if (s && !valid_stream(s)) RETURN(400);
  for (size_t i = 0; i < count; ++i) memcpy((char *)dst + 4 * i, &value, 4);
  RETURN(0);
}
EXPORT hipError_t hipMemsetD16Async(hipDeviceptr_t dst, unsigned short value, size_t count,
                                    hipStream_t s) {
  BEGIN(hipMemsetD16Async);
  if (s && !valid_stream(s)) RETURN(400);
  for (size_t i = 0; i < count; ++i) memcpy((char *)dst + 2 * i, &value, 2);
  RETURN(0);
}
EXPORT hipError_t hipHostRegister(void *p, size_t n, unsigned int flags) {
  BEGIN(hipHostRegister);
  (void)n, (void)flags;
  RETURN(p ? 0 : 1);
}
EXPORT hipError_t hipHostUnregister(void *p) {
  BEGIN(hipHostUnregister);
  RETURN(p ? 0 : 1);
}
/* The "device pointer" of host memory: the host address plus 1 MiB, so tests can tell it apart. */
EXPORT hipError_t hipHostGetDevicePointer(void **d, void *p, unsigned int flags) {
  BEGIN(hipHostGetDevicePointer);
  (void)flags;
  if (!p) RETURN(1);
  *d = (char *)p + (1 << 20);
  RETURN(0);
}
