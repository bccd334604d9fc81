/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* fakecuda.c - a recording fake CUDA driver for the CPU tests (no GPU needed).
 *
 * It exports the entry points mgpu-cached resolves (same exported names as libcuda.so.1) with a
 * small, strict model of the driver: devices (FAKECUDA_DEVICES, default 1) with primary contexts,
 * a per-thread context stack, libraries/modules parsed from blobs, per-context functions, streams
 * with pending work, events, host-backed memory. It counts every call, keeps a log of call names,
 * and lets tests inject failures and busy streams. All state is guarded by one mutex.
 *
 * Blob model: the kernels of a blob are the names following ".entry " in its bytes (PTX text up to
 * its NUL; a fatbin up to headerSize+payloadSize; an ELF up to its section header table's end).
 * A blob starting with "BAD" or with no ".entry" fails with CUDA_ERROR_INVALID_IMAGE.
 *
 * With FAKECUDA_EXEC=1 it also executes the work it is given (fake_exec.h: deferred per-stream
 * queues, a seeded random interleaving, the difftest kernels); the differential tester uses that.
 * Stream capture and capture modes (cuStreamBeginCapture, cuThreadExchangeStreamCaptureMode, calls
 * refused during another thread's global-mode capture): fake_capture.h.
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_api.h"
#include "symbol_index.h"
#define FAKE_CALL_HOOK fake_capture_hook /* fake_capture.h */
static int fake_capture_hook(int idx);
#include "fake_recording.h"

#define MAXDEV 8
#define MAXK 16
#define NOT_READY 600
#define INVALID_VALUE 1
#define INVALID_CONTEXT 201
#define INVALID_HANDLE 400
#define NOT_FOUND 500
#define INVALID_IMAGE 200
#define INVALID_DEVICE 101


struct CUctx_st { int device; };
struct fake_lib {
  int magic;      /* 0x11B for a library, 0x30D for a module */
  int nk;
  int any_name; /* a real GPU binary (no ".entry" text): every name asked for is a kernel */
  int has_counter; unsigned counter; /* module-scope variable `counter` (fake_globals.h) */
  char names[MAXK][64];
  int unloaded;
  CUcontext ctx; /* a module: the context it was loaded in (its functions belong to it) */
  struct fake_kernel { int magic; struct fake_lib *lib; int index; } kernels[MAXK];
};
struct fake_func {
  int magic; /* 0xF0 */
  struct fake_lib *lib;
  int index;
  CUcontext ctx;
  int smem_limit;
  struct fake_func *next;
};
#include "fake_globals.h"
struct CUstream_st {
  int magic; CUcontext ctx; unsigned flags; int pending; int destroyed;
  struct x_queue *xq; /* executing mode: its queue of deferred work (fake_exec.h) */
  CUstream waited[8]; int nwaited; /* streams whose pending work it waits for (cuStreamWaitEvent):
                                      finished with it (finish_stream) */
};
struct CUevent_st {
  int magic; CUcontext ctx; CUstream waits_on; int destroyed; long long t_ns;
  struct x_rec *xrec; /* executing mode: its latest record (fake_exec.h) */
};

static struct CUctx_st g_ctx[MAXDEV];
static int g_initialized;
static struct fake_func *g_funcs;
static int g_busy_launches;      /* launches leave work pending on their stream */
static long g_last_launch[16];   /* grid xyz, block xyz, smem, nattrs, attr ids.. */
static CUstream g_last_stream;
static void *g_last_function;

static _Thread_local CUcontext tl_stack[64];
static _Thread_local int tl_depth;


static int ndevices(void) {
  const char *v = getenv("FAKECUDA_DEVICES");
  int n = v ? atoi(v) : 1;
  return n < 0 ? 0 : n > MAXDEV ? MAXDEV : n;
}

/* ---- conc (issue 4): the driver torn down at exit ----
 * With FAKECUDA_DEINIT_AT_EXIT=1, cuInit registers an exit handler that marks the driver torn
 * down, as the real libcuda does (its exit handler runs before the program's global destructors,
 * where LLVM >= 21 code unloads its modules). Every call after that fails with
 * CUDA_ERROR_DEINITIALIZED and is counted; the fake's destructor prints the count to stdout. */
static int g_conc_torn_down;      /* under g_lock */
static long g_conc_calls_after;   /* under g_lock */
static void conc_tear_down(void) {
  pthread_mutex_lock(&g_lock);
  g_conc_torn_down = 1;
  pthread_mutex_unlock(&g_lock);
}
static void conc_register_exit(void) { /* from cuInit, lock held */
  static int done;
  const char *v = getenv("FAKECUDA_DEINIT_AT_EXIT");
  if (!done && v && *v == '1') {
    done = 1;
    atexit(conc_tear_down);
  }
}
__attribute__((destructor)) static void conc_report_after_exit(void) {
  const char *v = getenv("FAKECUDA_DEINIT_AT_EXIT");
  if (v && *v == '1') printf("fakecuda: %ld calls after the driver was torn down\n", g_conc_calls_after);
}
/* ---- end of conc section ---- */



static CUcontext current(void) { return tl_depth ? tl_stack[tl_depth - 1] : NULL; }

#include "fake_exec.h"
#include "fake_capture.h" /* stream capture and capture modes */
#include "fake_reset.h" /* reset: context resets, sticky errors (G7, G12) */

static int fake_before_call(void) { /* lock held */
  if (g_conc_torn_down) return ++g_conc_calls_after, 4; /* conc: CUDA_ERROR_DEINITIALIZED */
  return 0;
}

/* ---- test control interface (with fake_recording.h's) ---- */
EXPORT void fake_set_busy_launches(int on) {
  pthread_mutex_lock(&g_lock);
  g_busy_launches = on;
  pthread_mutex_unlock(&g_lock);
}
/* Finish all pending work on a stream (as if the GPU caught up). */
EXPORT void fake_complete(CUstream s) {
  pthread_mutex_lock(&g_lock);
  if (s) s->pending = 0, s->nwaited = 0;
  pthread_mutex_unlock(&g_lock);
}
EXPORT void *fake_current_context(void) { return current(); }
EXPORT void *fake_primary_context(int device) { return &g_ctx[device]; }
EXPORT void fake_set_current_context(void *ctx) {
  if (ctx) {
    tl_depth = 1;
    tl_stack[0] = ctx;
  } else {
    tl_depth = 0;
  }
}
EXPORT long fake_last_launch(int i) { return (i >= 0 && i < 16) ? g_last_launch[i] : -1; }
EXPORT void *fake_last_stream(void) { return g_last_stream; }
EXPORT void *fake_last_function(void) { return g_last_function; }
/* Device of the context a function was resolved in (-1 if not a fake function). */
EXPORT int fake_function_device(void *f) {
  struct fake_func *ff = f;
  return (ff && ff->magic == 0xF0) ? ff->ctx->device : -1;
}
EXPORT int fake_function_smem_limit(void *f) {
  struct fake_func *ff = f;
  return (ff && ff->magic == 0xF0) ? ff->smem_limit : -1;
}
EXPORT int fake_stream_flags(void *s) { return s ? (int)((CUstream)s)->flags : -1; }
EXPORT int fake_stream_device(void *s) { return s ? ((CUstream)s)->ctx->device : -1; }

/* ---- caching allocator support (branch alloc): device memory capacity, cuCtxSynchronize ----
 * Allocations are tracked with their sizes; fake_set_memory_limit(n) makes cuMemAlloc and
 * cuMemAllocManaged fail with CUDA_ERROR_OUT_OF_MEMORY (2) when the live bytes would exceed n
 * (0: no limit). cuMemFree of an address the fake did not hand out fails with INVALID_VALUE. */
static struct { void *p; size_t n; } *g_mem;
static size_t g_nmem, g_capmem, g_mem_used, g_mem_limit;
static long g_mem_frees_pending; /* cuMemFree calls made while some stream had pending work */
static int any_pending(void);
/* Allocate n bytes for the driver; 0 on success, 2 (out of memory). Lock held. */
static int mem_take(CUdeviceptr *p, size_t n) {
  if (g_mem_limit && g_mem_used + n > g_mem_limit) return 2;
  if (g_nmem == g_capmem) {
    size_t c = g_capmem ? g_capmem * 2 : 64;
    void *a = realloc(g_mem, c * sizeof *g_mem);
    if (!a) return 2;
    g_mem = a;
    g_capmem = c;
  }
  void *m = calloc(1, n ? n : 1);
  if (!m) return 2;
  g_mem[g_nmem].p = m;
  g_mem[g_nmem++].n = n;
  g_mem_used += n;
  *p = (CUdeviceptr)(uintptr_t)m;
  return 0;
}
/* Free an address mem_take handed out; INVALID_VALUE if unknown (0 is accepted). Lock held. */
static int mem_give(CUdeviceptr p) {
  if (!p) return 0;
  for (size_t i = 0; i < g_nmem; ++i)
    if (g_mem[i].p == (void *)(uintptr_t)p) {
      if (any_pending()) g_mem_frees_pending++;
      fake_forget(g_mem[i].p); /* reset: the address is the heap's again */
      free(g_mem[i].p);
      g_mem_used -= g_mem[i].n;
      g_mem[i] = g_mem[--g_nmem];
      return 0;
    }
  return INVALID_VALUE;
}
EXPORT void fake_set_memory_limit(size_t bytes) {
  pthread_mutex_lock(&g_lock);
  g_mem_limit = bytes;
  pthread_mutex_unlock(&g_lock);
}
EXPORT size_t fake_memory_used(void) {
  pthread_mutex_lock(&g_lock);
  size_t n = g_mem_used;
  pthread_mutex_unlock(&g_lock);
  return n;
}
EXPORT long fake_frees_while_pending(void) {
  pthread_mutex_lock(&g_lock);
  long n = g_mem_frees_pending;
  pthread_mutex_unlock(&g_lock);
  return n;
}
/* Whether any stream has pending work (the GPU is busy). Lock held. */
static int any_pending(void) {
  for (int i = 0; i < g_nobjs; ++i) {
    CUstream s = g_objs[i];
    if (s->magic == 0x57 && !s->destroyed && s->pending) return 1;
  }
  return 0;
}

/* ---- the GPU stuck behind a kernel that waits for the host (branch alloc, trust issue) ----
 * fake_hold(1): until fake_hold(0), a call that has to wait for pending work blocks, as the real
 * one does while a kernel spins on a host flag: cuCtxSynchronize while a stream of the current
 * context has pending work, cuMemFree (the real one waits for the device) while any stream has
 * pending work, cuStreamSynchronize on a
 * pending stream, cuEventSynchronize on an event recorded on a pending stream. fake_blocked()
 * says how many calls are blocked there now. Once released, the synchronize calls finish the
 * work they waited for (cuMemFree, as before, leaves it pending).
 * fake_thread_waits(): calls made on the calling thread that had to wait for pending work
 * (whether or not held), for tests that an entry point never waits for the program's kernels. */
static int g_hold;                     /* under g_lock */
static int g_blocked;                  /* calls blocked by the hold now; under g_lock */
static pthread_cond_t g_hold_cv = PTHREAD_COND_INITIALIZER;
static _Thread_local long tl_waits;
EXPORT void fake_hold(int on) {
  pthread_mutex_lock(&g_lock);
  g_hold = on;
  pthread_cond_broadcast(&g_hold_cv);
  pthread_mutex_unlock(&g_lock);
}
EXPORT int fake_blocked(void) {
  pthread_mutex_lock(&g_lock);
  int n = g_blocked;
  pthread_mutex_unlock(&g_lock);
  return n;
}
EXPORT long fake_thread_waits(void) { return tl_waits; }
/* A call that waits for pending work (`waits`): count it, block while held. Lock held. */
static void wait_for_work(int waits) {
  if (!waits) return;
  tl_waits++;
  g_blocked++;
  while (g_hold) pthread_cond_wait(&g_hold_cv, &g_lock);
  g_blocked--;
}
static int stream_pending(CUstream s) { return s && s->magic == 0x57 && s->pending; }
static int context_pending(CUcontext c) { /* lock held */
  for (int i = 0; i < g_nobjs; ++i) {
    CUstream s = g_objs[i];
    if (s->magic == 0x57 && !s->destroyed && s->ctx == c && s->pending) return 1;
  }
  return 0;
}

/* Finish the work of every stream of the current context. */
EXPORT CUresult cuCtxSynchronize(void) {
  BEGIN(cuCtxSynchronize);
  if (!current()) RETURN(INVALID_CONTEXT);
  RS_CHECK(fake_ctx_error(current())); /* reset */
  if (exec_on()) x_drain_ctx(current());
  wait_for_work(context_pending(current()));
  for (int i = 0; i < g_nobjs; ++i) {
    CUstream s = g_objs[i];
    if (s->magic == 0x57 && s->ctx == current()) s->pending = 0, s->nwaited = 0;
  }
  RETURN(0);
}
/* ---- end of the caching allocator section ---- */

/* ---- trace support (branch trace): timing events ----
 * cuEventRecord stamps an event with the host's CLOCK_MONOTONIC time (the fake "GPU" runs
 * everything at once); cuEventElapsedTime(_v2) gives the difference in ms, NOT_READY while the
 * end event waits on a stream with pending work (fake_set_busy_launches / fake_complete), and
 * counts its calls (fake_elapsed_calls: not in the symbol table the other counts use). */
#include <time.h>
static long g_elapsed_calls; /* under g_lock */
static long long fake_event_clock(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
static int valid_event(CUevent e);
static CUresult elapsed(float *ms, CUevent a, CUevent b) {
  pthread_mutex_lock(&g_lock);
  int r = fake_before_call();
  if (!r) {
    g_elapsed_calls++;
    if (!ms || !valid_event(a) || !valid_event(b)) r = INVALID_HANDLE;
    else if ((a->waits_on && a->waits_on->pending) || (b->waits_on && b->waits_on->pending))
      r = NOT_READY;
    else if (!a->t_ns || !b->t_ns) r = INVALID_HANDLE; /* never recorded */
    else *ms = (float)((double)(b->t_ns - a->t_ns) / 1e6);
  }
  pthread_mutex_unlock(&g_lock);
  return r;
}
EXPORT CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) { return elapsed(ms, a, b); }
EXPORT CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b) { return elapsed(ms, a, b); }
EXPORT long fake_elapsed_calls(void) {
  pthread_mutex_lock(&g_lock);
  long n = g_elapsed_calls;
  pthread_mutex_unlock(&g_lock);
  return n;
}
/* ---- end of the trace section ---- */

/* ---- modcache: gated calls and the dynamic shared memory check ----
 * fake_gate(name, n): the next n calls of entry point `name` (cuModuleLoadData,
 * cuModuleLoadDataEx, cuModuleGetFunction, cuLibraryLoadData, cuKernelGetFunction,
 * cuDevicePrimaryCtxRetain, cuFuncSetAttribute) block, outside the fake's lock, until
 * fake_gate_release() (a JIT or a context creation that takes as long as the test wants);
 * fake_gate_waiting() says how many are blocked now. Loads block before they read the blob,
 * cuFuncSetAttribute after it applied the value. With FAKECUDA_CHECK_SMEM=1 a
 * launch asking for more than 48 KiB of dynamic shared memory fails with CUDA_ERROR_INVALID_VALUE
 * unless the function's limit (cuFuncSetAttribute) admits it, as on the real driver. */
static pthread_mutex_t g_gate_lock = PTHREAD_MUTEX_INITIALIZER; /* guards the gate below */
static pthread_cond_t g_gate_cond = PTHREAD_COND_INITIALIZER;
static char g_gate_name[64];   /* entry point whose calls block */
static int g_gate_left;        /* calls still to block */
static int g_gate_waiting;     /* calls blocked now */
static long g_gate_generation; /* bumped by fake_gate_release */
EXPORT void fake_gate(const char *name, int n) {
  pthread_mutex_lock(&g_gate_lock);
  snprintf(g_gate_name, sizeof g_gate_name, "%s", name ? name : "");
  g_gate_left = n;
  pthread_mutex_unlock(&g_gate_lock);
}
EXPORT int fake_gate_waiting(void) {
  pthread_mutex_lock(&g_gate_lock);
  int n = g_gate_waiting;
  pthread_mutex_unlock(&g_gate_lock);
  return n;
}
EXPORT void fake_gate_release(void) {
  pthread_mutex_lock(&g_gate_lock);
  g_gate_left = 0;
  g_gate_generation++;
  pthread_cond_broadcast(&g_gate_cond);
  pthread_mutex_unlock(&g_gate_lock);
}
static void gate(const char *name) { /* g_lock not held */
  pthread_mutex_lock(&g_gate_lock);
  if (g_gate_left > 0 && strcmp(name, g_gate_name) == 0) {
    g_gate_left--;
    g_gate_waiting++;
    long gen = g_gate_generation;
    while (gen == g_gate_generation) pthread_cond_wait(&g_gate_cond, &g_gate_lock);
    g_gate_waiting--;
  }
  pthread_mutex_unlock(&g_gate_lock);
}
static int smem_refused(void *f, unsigned smem) { /* g_lock held, f a valid function */
  static int check = -1;
  if (check < 0) check = getenv("FAKECUDA_CHECK_SMEM") && *getenv("FAKECUDA_CHECK_SMEM") == '1';
  return check && smem > 49152 && (int)smem > ((struct fake_func *)f)->smem_limit;
}
/* ---- end of the modcache section ---- */

/* ---- driver entry points ---- */
EXPORT CUresult cuGetErrorName(CUresult error, const char **pStr) {
  switch (error) {
  case 0: *pStr = "CUDA_SUCCESS"; break;
  case 1: *pStr = "CUDA_ERROR_INVALID_VALUE"; break;
  case 2: *pStr = "CUDA_ERROR_OUT_OF_MEMORY"; break;
  case 3: *pStr = "CUDA_ERROR_NOT_INITIALIZED"; break;
  case 4: *pStr = "CUDA_ERROR_DEINITIALIZED"; break;
  case 100: *pStr = "CUDA_ERROR_NO_DEVICE"; break;
  case 101: *pStr = "CUDA_ERROR_INVALID_DEVICE"; break;
  case 200: *pStr = "CUDA_ERROR_INVALID_IMAGE"; break;
  case 201: *pStr = "CUDA_ERROR_INVALID_CONTEXT"; break;
  case 218: *pStr = "CUDA_ERROR_INVALID_PTX"; break;
  case 400: *pStr = "CUDA_ERROR_INVALID_HANDLE"; break;
  case 500: *pStr = "CUDA_ERROR_NOT_FOUND"; break;
  case 600: *pStr = "CUDA_ERROR_NOT_READY"; break;
  case 700: *pStr = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
  case 709: *pStr = "CUDA_ERROR_CONTEXT_IS_DESTROYED"; break; /* reset */
  case 710: *pStr = "CUDA_ERROR_ASSERT"; break;               /* reset */
  case 719: *pStr = "CUDA_ERROR_LAUNCH_FAILED"; break;        /* reset */
  default: *pStr = NULL; return INVALID_VALUE;
  }
  return 0;
}

EXPORT CUresult cuInit(unsigned int flags) {
  BEGIN(cuInit);
  (void)flags;
  conc_register_exit(); /* conc */
  for (int i = 0; i < MAXDEV; ++i) g_ctx[i].device = i;
  g_initialized = 1;
  RETURN(0);
}
EXPORT CUresult cuDriverGetVersion(int *v) {
  BEGIN(cuDriverGetVersion);
  *v = 13000;
  RETURN(0);
}
EXPORT CUresult cuDeviceGetCount(int *count) {
  BEGIN(cuDeviceGetCount);
  if (!g_initialized) RETURN(3);
  *count = ndevices();
  RETURN(0);
}
EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  BEGIN(cuDeviceGet);
  if (!g_initialized) RETURN(3);
  if (ordinal < 0 || ordinal >= ndevices()) RETURN(INVALID_DEVICE);
  *device = ordinal;
  RETURN(0);
}
EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
  BEGIN(cuDeviceGetAttribute);
  if (dev < 0 || dev >= ndevices()) RETURN(INVALID_DEVICE);
  /* 97: shared memory per block opt-in; 75 / 76: compute capability, 9.0 (an H100) unless
   * FAKECUDA_SM lists one per device ("90,80": device 1 is an 8.0) */
  int sm = 90;
  const char *v = getenv("FAKECUDA_SM");
  for (int d = 0; v && *v; ++d) {
    if (d == dev) {
      sm = atoi(v);
      break;
    }
    v = strchr(v, ',');
    if (v) ++v;
  }
  *pi = attrib == 97 ? 232448 : attrib == 75 ? sm / 10 : attrib == 76 ? sm % 10 : 1;
  RETURN(0);
}
EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  gate("cuDevicePrimaryCtxRetain"); /* modcache */
  BEGIN(cuDevicePrimaryCtxRetain);
  if (dev < 0 || dev >= ndevices()) RETURN(INVALID_DEVICE);
  g_rs_dead[dev] = 0; /* reset: retained again, the same pointer works (a new id) */
  *pctx = &g_ctx[dev];
  RETURN(0);
}
EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx) {
  BEGIN(cuCtxGetCurrent);
  *pctx = current();
  RETURN(0);
}
EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  BEGIN(cuCtxPushCurrent);
  if (!ctx || tl_depth >= 64) RETURN(INVALID_CONTEXT);
  tl_stack[tl_depth++] = ctx;
  RETURN(0);
}
EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx) {
  BEGIN(cuCtxPopCurrent);
  if (!tl_depth) RETURN(INVALID_CONTEXT);
  CUcontext c = tl_stack[--tl_depth];
  if (pctx) *pctx = c;
  RETURN(0);
}

/* Calls only `mgpu-cached bench` makes (the library makes none), not recorded: cuCtxSetCurrent
 * (replaces the top of the calling thread's stack, or pushes onto an empty one; NULL empties it),
 * a device name, and a PTX "linker" whose cubin is the PTX itself (modules read ".entry" names). */
EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  if (!ctx) tl_depth = 0;
  else if (tl_depth) tl_stack[tl_depth - 1] = ctx;
  else tl_stack[tl_depth++] = ctx;
  return 0;
}
EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
  if (!name || len < 1) return INVALID_VALUE;
  snprintf(name, (size_t)len, "fake CUDA device %d", (int)dev);
  return 0;
}
struct fake_link { /* one cuLinkCreate state: owns the bytes added so far */
  unsigned char *data;
  size_t n;
};
EXPORT CUresult cuLinkCreate_v2(unsigned n, void *opts, void **vals, void **state) {
  (void)n, (void)opts, (void)vals;
  if (!state) return INVALID_VALUE;
  *state = calloc(1, sizeof(struct fake_link));
  return *state ? 0 : 2; /* CUDA_ERROR_OUT_OF_MEMORY */
}
EXPORT CUresult cuLinkAddData_v2(void *state, int type, void *data, size_t size, const char *name,
                                 unsigned n, void *opts, void **vals) {
  (void)type, (void)name, (void)n, (void)opts, (void)vals;
  struct fake_link *l = state;
  if (!l || !data) return INVALID_VALUE;
  unsigned char *d = realloc(l->data, l->n + size + 1);
  if (!d) return 2;
  memcpy(d + l->n, data, size);
  l->n += size;
  d[l->n] = 0;
  l->data = d;
  return 0;
}
EXPORT CUresult cuLinkComplete(void *state, void **cubin, size_t *size) {
  struct fake_link *l = state;
  if (!l || !l->data || !cubin || !size) return INVALID_VALUE;
  *cubin = l->data;
  *size = l->n;
  return 0;
}
EXPORT CUresult cuLinkDestroy(void *state) {
  struct fake_link *l = state;
  if (l) free(l->data);
  free(l);
  return 0;
}

/* Blob parsing shared by libraries and modules. */
static size_t blob_extent(const unsigned char *p) {
  /* The magic byte by byte: a short blob at the end of readable memory is not read past. */
  if (p[0] == 0x50 && p[1] == 0xED && p[2] == 0x55 && p[3] == 0xBA) {
    uint16_t h;
    uint64_t n;
    memcpy(&h, p + 6, 2);
    memcpy(&n, p + 8, 8);
    return h + (size_t)n;
  }
  return elf_or_text_extent(p);
}

static int parse_blob(const void *data, struct fake_lib *lib, int magic) {
  const unsigned char *p = data;
  if (!p) return INVALID_VALUE;
  if (p[0] == 'B' && p[1] == 'A' && p[2] == 'D') return INVALID_IMAGE;
  size_t n = blob_extent(p);
  if (n > ((size_t)1 << 24)) return INVALID_IMAGE; /* a header pointing far away: rejected unread */
  memset(lib, 0, sizeof *lib);
  lib->magic = magic;
  for (size_t i = 0; i + 7 < n && lib->nk < MAXK; ++i) {
    if (memcmp(p + i, ".entry ", 7) != 0) continue;
    size_t j = i + 7, k = 0;
    while (j < n && k < 63 && p[j] && p[j] != ' ' && p[j] != '\n' && p[j] != '(') lib->names[lib->nk][k++] = (char)p[j++];
    lib->names[lib->nk][k] = 0;
    lib->kernels[lib->nk].magic = 0x7E;
    lib->kernels[lib->nk].lib = lib;
    lib->kernels[lib->nk].index = lib->nk;
    lib->nk++;
  }
  if (!lib->nk && (p[0] == 0x7f || p[0] == 0x50)) lib->any_name = 1; /* ELF or fatbin */
  fake_globals_parse(lib, p, n);
  return (lib->nk || lib->any_name) ? 0 : INVALID_IMAGE;
}

/* Index of kernel `name` in lib, adding it for real binaries; -1 if there is none. */
static int kernel_index(struct fake_lib *lib, const char *name) {
  for (int i = 0; i < lib->nk; ++i)
    if (strcmp(lib->names[i], name) == 0) return i;
  if (!lib->any_name || lib->nk >= MAXK) return -1;
  int i = lib->nk++;
  snprintf(lib->names[i], sizeof lib->names[i], "%s", name);
  lib->kernels[i].magic = 0x7E;
  lib->kernels[i].lib = lib;
  lib->kernels[i].index = i;
  return i;
}

static struct fake_func *function_for(struct fake_lib *lib, int index, CUcontext ctx) {
  for (struct fake_func *f = g_funcs; f; f = f->next)
    if (f->lib == lib && f->index == index && f->ctx == ctx) return f;
  struct fake_func *f = calloc(1, sizeof *f);
  f->magic = 0xF0;
  f->lib = lib;
  f->index = index;
  f->ctx = ctx;
  f->next = g_funcs;
  g_funcs = f;
  return f;
}

EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *o,
                                  void **ov, unsigned int no, CUlibraryOption *lo, void **lov,
                                  unsigned int nlo) {
  gate("cuLibraryLoadData"); /* modcache */
  BEGIN(cuLibraryLoadData);
  (void)o, (void)ov, (void)no, (void)lo, (void)lov, (void)nlo;
  struct fake_lib *lib = malloc(sizeof *lib);
  int r = parse_blob(code, lib, 0x11B);
  if (r) {
    free(lib);
    RETURN(r);
  }
  *library = (CUlibrary)lib;
  RETURN(0);
}
EXPORT CUresult cuLibraryUnload(CUlibrary library) {
  BEGIN(cuLibraryUnload);
  struct fake_lib *lib = (struct fake_lib *)library;
  if (!lib || lib->magic != 0x11B || lib->unloaded) RETURN(INVALID_HANDLE);
  lib->unloaded = 1; /* kept allocated: the model never reuses addresses */
  RETURN(0);
}
EXPORT CUresult cuLibraryGetKernelCount(unsigned int *count, CUlibrary library) {
  BEGIN(cuLibraryGetKernelCount);
  struct fake_lib *lib = (struct fake_lib *)library;
  if (!lib || lib->magic != 0x11B || lib->unloaded) RETURN(INVALID_HANDLE);
  *count = lib->any_name ? 0 : (unsigned)lib->nk; /* real binaries: found by name only */
  RETURN(0);
}
EXPORT CUresult cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int n, CUlibrary library) {
  BEGIN(cuLibraryEnumerateKernels);
  struct fake_lib *lib = (struct fake_lib *)library;
  if (!lib || lib->magic != 0x11B || lib->unloaded || n > (unsigned)lib->nk) RETURN(INVALID_VALUE);
  for (unsigned i = 0; i < n; ++i) kernels[i] = (CUkernel)&lib->kernels[i];
  RETURN(0);
}
EXPORT CUresult cuKernelGetName(const char **name, CUkernel kernel) {
  BEGIN(cuKernelGetName);
  struct fake_kernel *k = (struct fake_kernel *)kernel;
  if (!k || k->magic != 0x7E) RETURN(INVALID_HANDLE);
  *name = k->lib->names[k->index];
  RETURN(0);
}
EXPORT CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name) {
  BEGIN(cuLibraryGetKernel);
  struct fake_lib *lib = (struct fake_lib *)library;
  if (!lib || lib->magic != 0x11B || lib->unloaded) RETURN(INVALID_HANDLE);
  int i = kernel_index(lib, name);
  if (i < 0) RETURN(NOT_FOUND);
  *pKernel = (CUkernel)&lib->kernels[i];
  RETURN(0);
}
EXPORT CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel) {
  gate("cuKernelGetFunction"); /* modcache */
  BEGIN(cuKernelGetFunction);
  struct fake_kernel *k = (struct fake_kernel *)kernel;
  if (!k || k->magic != 0x7E || k->lib->unloaded) RETURN(INVALID_HANDLE);
  if (!current()) RETURN(INVALID_CONTEXT);
  RS_CHECK(fake_ctx_error(current())); /* reset */
  *pFunc = (CUfunction)function_for(k->lib, k->index, current());
  fake_born(*pFunc, current()); /* reset */
  RETURN(0);
}

/* cuModuleLoadData and cuModuleLoadDataEx: a module of the blob's kernels. Lock held. */
static int load_module(CUmodule *module, const void *image) {
  if (!current()) return INVALID_CONTEXT;
  if (fake_ctx_error(current())) return fake_ctx_error(current()); /* reset */
  struct fake_lib *lib = malloc(sizeof *lib);
  int r = parse_blob(image, lib, 0x30D);
  if (r) {
    free(lib);
    return r;
  }
  lib->ctx = current();
  fake_born(lib, current()); /* reset */
  *module = (CUmodule)lib;
  return 0;
}
EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  gate("cuModuleLoadData"); /* modcache */
  BEGIN(cuModuleLoadData);
  RETURN(load_module(module, image));
}
EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int n,
                                   CUjit_option *o, void **v) {
  gate("cuModuleLoadDataEx"); /* modcache */
  BEGIN(cuModuleLoadDataEx);
  (void)n, (void)o, (void)v;
  RETURN(load_module(module, image));
}
/* cuModuleUnload calls made while another context than the module's was current (the real driver
 * unloads from the current context): counted, fake_module_unloads_elsewhere(). Under g_lock. */
static long g_unloads_elsewhere;
EXPORT long fake_module_unloads_elsewhere(void) {
  pthread_mutex_lock(&g_lock);
  long n = g_unloads_elsewhere;
  pthread_mutex_unlock(&g_lock);
  return n;
}
EXPORT CUresult cuModuleUnload(CUmodule hmod) {
  BEGIN(cuModuleUnload);
  struct fake_lib *lib = (struct fake_lib *)hmod;
  if (!lib || lib->magic != 0x30D || lib->unloaded) RETURN(INVALID_HANDLE);
  if (lib->ctx && current() != lib->ctx) g_unloads_elsewhere++;
  if (fake_obj_error(lib) == CONTEXT_IS_DESTROYED) RETURN(INVALID_HANDLE); /* reset (H100) */
  RS_CHECK(fake_obj_error(lib)); /* reset: sticky */
  lib->unloaded = 1;
  RETURN(0);
}
EXPORT CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name) {
  gate("cuModuleGetFunction"); /* modcache */
  BEGIN(cuModuleGetFunction);
  struct fake_lib *lib = (struct fake_lib *)hmod;
  if (!lib || lib->magic != 0x30D || lib->unloaded) RETURN(INVALID_HANDLE);
  RS_CHECK(fake_obj_error(lib)); /* reset */
  int i = kernel_index(lib, name);
  if (i < 0) RETURN(NOT_FOUND);
  *hfunc = (CUfunction)function_for(lib, i, lib->ctx ? lib->ctx : &g_ctx[0]);
  fake_born(*hfunc, lib->ctx ? lib->ctx : &g_ctx[0]); /* reset */
  RETURN(0);
}
EXPORT CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  BEGIN(cuFuncSetAttribute);
  struct fake_func *f = (struct fake_func *)hfunc;
  if (!f || f->magic != 0xF0) RETURN(INVALID_HANDLE);
  RS_CHECK(fake_obj_error(f)); /* reset */
  if (attrib == 8) f->smem_limit = value;
  pthread_mutex_unlock(&g_lock);
  gate("cuFuncSetAttribute"); /* modcache: returns late, the value applied */
  return 0;
}

/* ---- graph launches (issue 12) ----
 * Kernel arguments: every fake kernel takes the arguments FAKECUDA_PARAM_SIZES lists (comma-
 * separated byte sizes, at most 8 of at most 8 bytes; default none). "unknown" makes
 * cuFuncGetParamInfo fail with CUDA_ERROR_NOT_SUPPORTED. Launches record the values they pass
 * (cuLaunchKernel: read through the caller's pointers at the call; cuGraphLaunch: the values the
 * exec's node holds, copied at cuGraphAddKernelNode / cuGraphExecKernelNodeSetParams as the real
 * driver copies them). fake_last_arg(i) reads them back. */
#define GRAPH_MAXARGS 8
#define GRAPH_MAXARGBYTES 64
static long g_last_args[GRAPH_MAXARGS];
/* The differential tester's kernels (tests/difftest/kernels.cu) have their real signatures:
 * (pointer, int n, pointer) for dt_add, (pointer, int n, unsigned) for the others. */
static int dt_param_sizes(const struct fake_func *f, size_t *sizes) {
  const char *name = (f && f->lib) ? f->lib->names[f->index] : "";
  if (strncmp(name, "dt_", 3) != 0) return -2;
  sizes[0] = 8, sizes[1] = 4, sizes[2] = strcmp(name, "dt_add") == 0 ? 8 : 4;
  return 3;
}
static int param_sizes_of(const struct fake_func *f, size_t *sizes) { /* -1 unknown */
  int n = dt_param_sizes(f, sizes);
  if (n >= 0) return n;
  const char *v = getenv("FAKECUDA_PARAM_SIZES");
  if (!v || !*v) return 0;
  if (strcmp(v, "unknown") == 0) return -1;
  n = 0;
  while (*v && n < GRAPH_MAXARGS) {
    sizes[n++] = (size_t)strtoul(v, (char **)&v, 10);
    if (*v == ',') ++v;
  }
  return n;
}
static void pack_args(const struct fake_func *f, unsigned char *vals, void **params) {
  size_t sizes[GRAPH_MAXARGS];
  int n = param_sizes_of(f, sizes);
  memset(vals, 0, GRAPH_MAXARGBYTES);
  for (int i = 0; i < n && params; ++i) memcpy(vals + 8 * i, params[i], sizes[i] > 8 ? 8 : sizes[i]);
}
static long g_arg_log[4096]; /* first argument of every kernel run, in order */
static int g_arg_log_n;
static void record_args(const unsigned char *vals) {
  for (int i = 0; i < GRAPH_MAXARGS; ++i) memcpy(&g_last_args[i], vals + 8 * i, 8);
  if (g_arg_log_n < 4096) g_arg_log[g_arg_log_n++] = g_last_args[0];
}
EXPORT void fake_arg_log_clear(void) { /* tests: forget the kernels run so far */
  pthread_mutex_lock(&g_lock);
  g_arg_log_n = 0;
  pthread_mutex_unlock(&g_lock);
}
EXPORT int fake_arg_log(long *out, int max) {
  pthread_mutex_lock(&g_lock);
  int n = g_arg_log_n < max ? g_arg_log_n : max;
  memcpy(out, g_arg_log, (size_t)n * sizeof *out);
  pthread_mutex_unlock(&g_lock);
  return n;
}
static long g_live_execs; /* execs instantiated and not destroyed */
EXPORT long fake_live_execs(void) { return g_live_execs; }
EXPORT long fake_last_arg(int i) { return (i >= 0 && i < GRAPH_MAXARGS) ? g_last_args[i] : -1; }

static int valid_stream(CUstream s);
/* As the real driver (CUDA 12 / 13, launch_threads.c's -nocontext probes): a launch on a stream
 * (not NULL, legacy or per-thread) with no context current runs in the stream's context
 * (g_bare_launches counts them); FAKECUDA_BARE_REFUSED=1 refuses it (INVALID_CONTEXT), as a
 * driver that requires a current context would. Lock held. */
static long g_bare_launches;
EXPORT long fake_bare_launches(void) { return g_bare_launches; }
static int bare_refused(void) {
  static int v = -1;
  if (v < 0) v = getenv("FAKECUDA_BARE_REFUSED") && *getenv("FAKECUDA_BARE_REFUSED") == '1';
  return v;
}
static int launch_common(struct fake_func *f, CUstream s, CUcontext *used) {
  CUcontext cx = current();
  if (!cx) {
    if (!s || (uintptr_t)s <= 2 || !valid_stream(s) || bare_refused()) return INVALID_CONTEXT;
    cx = s->ctx;
    g_bare_launches++;
  }
  *used = cx;
  if (!f || f->magic != 0xF0 || f->lib->unloaded) return INVALID_HANDLE;
  if (f->lib->magic == 0x11B && f->ctx != cx) return INVALID_CONTEXT;
  if (s && !valid_stream(s)) return INVALID_HANDLE;
  /* as the real driver (seen on two H200s): a function of one device's context on a stream of
   * another's is rejected */
  if (s && (uintptr_t)s > 2 && f->ctx && s->ctx != f->ctx) return INVALID_HANDLE;
  if (fake_ctx_error(cx)) return fake_ctx_error(cx); /* reset */
  if (fake_obj_error(f)) return fake_obj_error(f);   /* reset */
  if (fake_obj_error(s)) return fake_obj_error(s);                 /* reset */
  fake_launched(f);                                                /* reset: k_assert */
  g_last_stream = s;
  g_last_function = f;
  if (s && g_busy_launches) s->pending++;
  return 0;
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned smem, CUstream s, void **params,
                               void **extra) {
  BEGIN(cuLaunchKernel);
  if (cap_absorb(s)) RETURN(0); /* fake_capture.h */
  (void)extra;
  CUcontext cx = NULL;
  int r = launch_common((struct fake_func *)f, s, &cx);
  if (r) RETURN(r);
  if (smem_refused(f, smem)) RETURN(INVALID_VALUE); /* modcache */
  if (exec_on()) x_launch(((struct fake_func *)f)->lib->names[((struct fake_func *)f)->index], params, s, current());
  long v[8] = {gx, gy, gz, bx, by, bz, smem, 0};
  memset(g_last_launch, 0, sizeof g_last_launch);
  memcpy(g_last_launch, v, sizeof v);
  unsigned char vals[GRAPH_MAXARGBYTES];
  pack_args((struct fake_func *)f, vals, params);
  record_args(vals);
  fake_globals_launch((struct fake_func *)f, params, NULL);
  RETURN(0);
}
EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params,
                                 void **extra) {
  BEGIN(cuLaunchKernelEx);
  if (cap_absorb(c->hStream)) RETURN(0); /* fake_capture.h */
  (void)params, (void)extra;
  CUcontext cx = NULL;
  int r = launch_common((struct fake_func *)f, c->hStream, &cx);
  if (r) RETURN(r);
  if (smem_refused(f, c->sharedMemBytes)) RETURN(INVALID_VALUE); /* modcache */
  if (exec_on()) x_launch(((struct fake_func *)f)->lib->names[((struct fake_func *)f)->index], params, c->hStream, current());
  memset(g_last_launch, 0, sizeof g_last_launch);
  long v[8] = {c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,
               c->sharedMemBytes, c->numAttrs};
  memcpy(g_last_launch, v, sizeof v);
  for (unsigned i = 0; i < c->numAttrs && i < 4; ++i) {
    g_last_launch[8 + 2 * i] = c->attrs[i].id;
    g_last_launch[9 + 2 * i] = c->attrs[i].id == 4 ? (long)c->attrs[i].value.clusterDim.x
                                                    : (long)c->attrs[i].value.cooperative;
  }
  RETURN(0);
}

EXPORT CUresult cuStreamCreate(CUstream *ps, unsigned int flags) {
  BEGIN(cuStreamCreate);
  if (!current()) RETURN(INVALID_CONTEXT);
  RS_CHECK(fake_ctx_error(current())); /* reset */
  CUstream s = calloc(1, sizeof *s);
  s->magic = 0x57;
  s->ctx = current();
  s->flags = flags;
  remember(s);
  fake_born(s, current()); /* reset */
  *ps = s;
  RETURN(0);
}
static int valid_event(CUevent e) { return known(e) && e->magic == 0xE7 && !e->destroyed; }
static int valid_stream(CUstream s) { return known(s) && s->magic == 0x57 && !s->destroyed; }
EXPORT CUresult cuStreamDestroy_v2(CUstream s) {
  BEGIN(cuStreamDestroy);
  if (!valid_stream(s)) RETURN(INVALID_HANDLE);
  RS_CHECK(fake_obj_error(s)); /* reset */
  s->destroyed = 1; /* never freed: stale use is detected */
  RETURN(0);
}
/* The work of `s` is done, and with it the work it waited for (cuStreamWaitEvent). Lock held. */
static void finish_stream(CUstream s, int depth) {
  if (!s || s->magic != 0x57) return;
  s->pending = 0;
  for (int i = 0; i < s->nwaited && depth < 8; ++i) finish_stream(s->waited[i], depth + 1);
  s->nwaited = 0;
}
EXPORT CUresult cuStreamSynchronize(CUstream s) {
  BEGIN(cuStreamSynchronize);
  if (cap_refuse_wait(s)) RETURN(CAP_UNSUPPORTED); /* fake_capture.h */
  if (!s && !current()) RETURN(INVALID_CONTEXT);
  if (s && !valid_stream(s)) RETURN(INVALID_HANDLE);
  RS_CHECK(s ? fake_obj_error(s) : fake_ctx_error(current())); /* reset */
  if (exec_on()) x_drain(x_queue_of(s, current()));
  if (!s) RETURN(0);
  wait_for_work(stream_pending(s)); /* alloc section */
  finish_stream(s, 0);
  RETURN(0);
}
EXPORT CUresult cuStreamQuery(CUstream s) {
  BEGIN(cuStreamQuery);
  if (cap_refuse_wait(s)) RETURN(CAP_UNSUPPORTED); /* fake_capture.h */
  if (!valid_stream(s)) RETURN(INVALID_HANDLE);
  RS_CHECK(fake_obj_error(s)); /* reset */
  if (exec_on()) RETURN(x_stream_query(s, current()));
  RETURN(s->pending ? NOT_READY : 0);
}
EXPORT CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) {
  BEGIN(cuStreamWaitEvent);
  if (cap_absorb(s)) RETURN(0); /* fake_capture.h */
  (void)flags;
  if ((s && !valid_stream(s)) || !valid_event(e)) RETURN(INVALID_HANDLE);
  RS_CHECK(fake_obj_error(e) ? fake_obj_error(e) : fake_obj_error(s)); /* reset */
  if (exec_on()) x_wait(s, e, current());
  if (s && e->waits_on && e->waits_on->pending) {
    s->pending++;
    if (s->nwaited < 8) s->waited[s->nwaited++] = e->waits_on;
  }
  RETURN(0);
}
EXPORT CUresult cuEventCreate(CUevent *pe, unsigned int flags) {
  BEGIN(cuEventCreate);
  (void)flags;
  if (!current()) RETURN(INVALID_CONTEXT);
  RS_CHECK(fake_ctx_error(current())); /* reset */
  CUevent e = calloc(1, sizeof *e);
  e->magic = 0xE7;
  e->ctx = current();
  remember(e);
  fake_born(e, current()); /* reset */
  *pe = e;
  RETURN(0);
}
EXPORT CUresult cuEventDestroy_v2(CUevent e) {
  BEGIN(cuEventDestroy);
  if (!valid_event(e)) RETURN(INVALID_HANDLE);
  RS_CHECK(fake_obj_error(e)); /* reset */
  e->destroyed = 1;
  RETURN(0);
}
EXPORT CUresult cuEventRecord(CUevent e, CUstream s) {
  BEGIN(cuEventRecord);
  if (cap_absorb(s)) RETURN(0); /* fake_capture.h */
  if (!valid_event(e) || (s && !valid_stream(s))) RETURN(INVALID_HANDLE);
  RS_CHECK(fake_obj_error(e) ? fake_obj_error(e) : fake_obj_error(s)); /* reset */
  if (exec_on()) x_record(e, s, current());
  e->waits_on = s;
  e->t_ns = fake_event_clock(); /* trace section */
  RETURN(0);
}
EXPORT CUresult cuEventSynchronize(CUevent e) {
  BEGIN(cuEventSynchronize);
  if (!valid_event(e)) RETURN(INVALID_HANDLE);
  RS_CHECK(fake_obj_error(e)); /* reset */
  if (exec_on() && e->xrec) x_run_until(e->xrec);
  wait_for_work(stream_pending(e->waits_on)); /* alloc section */
  finish_stream(e->waits_on, 0);
  RETURN(0);
}
EXPORT CUresult cuEventQuery(CUevent e) {
  BEGIN(cuEventQuery);
  if (!valid_event(e)) RETURN(INVALID_HANDLE);
  RS_CHECK(fake_obj_error(e)); /* reset */
  if (exec_on()) RETURN(x_event_query(e));
  RETURN(e->waits_on && e->waits_on->pending ? NOT_READY : 0);
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  BEGIN(cuMemAlloc);
  if (!current()) RETURN(INVALID_CONTEXT);
  RS_CHECK(fake_ctx_error(current())); /* reset */
  int r = mem_take(p, n);
  if (!r) fake_born((void *)(uintptr_t)*p, current()); /* reset */
  if (!r && exec_on()) x_note_alloc(*p, current());
  RETURN(r);
}
EXPORT CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned int flags) {
  BEGIN(cuMemAllocManaged);
  (void)flags;
  if (!current()) RETURN(INVALID_CONTEXT);
  RS_CHECK(fake_ctx_error(current())); /* reset */
  int r = mem_take(p, n);
  if (!r) fake_born((void *)(uintptr_t)*p, current()); /* reset */
  if (!r && exec_on()) x_note_alloc(*p, current());
  RETURN(r);
}
EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
  BEGIN(cuMemFree);
  RS_CHECK(fake_obj_error((void *)(uintptr_t)p)); /* reset */
  RS_CHECK(fake_ctx_error(current()));            /* reset */
  if (exec_on()) x_before_free(p);
  wait_for_work(any_pending()); /* alloc section: the real cuMemFree waits for the device */
  RETURN(mem_give(p));
}
EXPORT CUresult cuMemcpy(CUdeviceptr d, CUdeviceptr s, size_t n) {
  BEGIN(cuMemcpy);
  RS_CHECK(fake_ctx_error(current())); /* reset */
  RS_CHECK(fake_obj_error((void *)(uintptr_t)d) ? fake_obj_error((void *)(uintptr_t)d)
                                                : fake_obj_error((void *)(uintptr_t)s));
  if (exec_on()) x_drain(x_queue_of(NULL, current()));
  memcpy((void *)(uintptr_t)d, (void *)(uintptr_t)s, n);
  RETURN(0);
}
EXPORT CUresult cuMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) {
  BEGIN(cuMemcpyAsync);
  if (cap_absorb(st)) RETURN(0); /* fake_capture.h */
  if (!st && !current()) RETURN(INVALID_CONTEXT);
  RS_CHECK(st ? fake_obj_error(st) : fake_ctx_error(current())); /* reset */
  RS_CHECK(fake_obj_error((void *)(uintptr_t)d));                 /* reset */
  if (exec_on()) RETURN((x_enqueue(st, current(), X_COPY, d, s, n), 0));
  memcpy((void *)(uintptr_t)d, (void *)(uintptr_t)s, n);
  RETURN(0);
}
EXPORT CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream st) {
  BEGIN(cuMemsetD32Async);
  if (cap_absorb(st)) RETURN(0); /* fake_capture.h */
  if (!st && !current()) RETURN(INVALID_CONTEXT);
  RS_CHECK(st ? fake_obj_error(st) : fake_ctx_error(current())); /* reset */
  RS_CHECK(fake_obj_error((void *)(uintptr_t)d));                 /* reset */
  if (exec_on()) RETURN((x_enqueue(st, current(), X_SET32, d, v, n), 0));
  for (size_t i = 0; i < n; ++i) ((uint32_t *)(uintptr_t)d)[i] = v;
  RETURN(0);
}
EXPORT CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream st) {
  BEGIN(cuMemsetD16Async);
  if (cap_absorb(st)) RETURN(0); /* fake_capture.h */
  if (!st && !current()) RETURN(INVALID_CONTEXT);
  RS_CHECK(st ? fake_obj_error(st) : fake_ctx_error(current())); /* reset */
  RS_CHECK(fake_obj_error((void *)(uintptr_t)d));                 /* reset */
  if (exec_on()) RETURN((x_enqueue(st, current(), X_SET16, d, v, n), 0));
  for (size_t i = 0; i < n; ++i) ((uint16_t *)(uintptr_t)d)[i] = v;
  RETURN(0);
}
static void *g_registered;
static size_t g_registered_size;
EXPORT size_t fake_registered_size(void *p) { return p == g_registered ? g_registered_size : 0; }
EXPORT CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned int flags) {
  BEGIN(cuMemHostRegister);
  (void)flags;
  if (!current()) RETURN(INVALID_CONTEXT);
  g_registered = p;
  g_registered_size = n;
  RETURN(0);
}
EXPORT CUresult cuMemHostUnregister(void *p) {
  BEGIN(cuMemHostUnregister);
  if (!current()) RETURN(INVALID_CONTEXT);
  if (p == g_registered) g_registered_size = 0;
  RETURN(0);
}
EXPORT CUresult cuTensorMapEncodeTiled(CUtensorMap *m, CUtensorMapDataType t, cuuint32_t rank,
                                       void *addr, const cuuint64_t *dim, const cuuint64_t *str,
                                       const cuuint32_t *box, const cuuint32_t *es,
                                       CUtensorMapInterleave il, CUtensorMapSwizzle sw,
                                       CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
  BEGIN(cuTensorMapEncodeTiled);
  (void)es, (void)il, (void)sw, (void)l2, (void)oob;
  if (!current()) RETURN(INVALID_CONTEXT);
  /* A recognisable encoding: type, rank, address, dims, strides, box. */
  memset(m, 0, sizeof *m);
  m->opaque[0] = (cuuint64_t)t;
  m->opaque[1] = rank;
  m->opaque[2] = (cuuint64_t)(uintptr_t)addr;
  for (unsigned i = 0; i < rank && i < 5; ++i) {
    m->opaque[3 + i] = dim[i];
    m->opaque[8 + i] = box[i];
  }
  for (unsigned i = 0; i + 1 < rank && i < 3; ++i) m->opaque[13 + i] = str[i];
  RETURN(0);
}

/* ---- graph launches (issue 12): graphs of kernel nodes, execs, launches ----
 * Built with -DFAKECUDA_NO_GRAPH: a driver without these entry points (before CUDA 12). */
#ifndef FAKECUDA_NO_GRAPH
struct fake_node {
  int magic; /* 0x90DE */
  struct fake_func *func;
  unsigned dims[7];
  unsigned char vals[GRAPH_MAXARGBYTES];
  int ndeps;
};
struct CUgraph_st { int magic; /* 0x6A */ int n; struct fake_node nodes[128]; int destroyed; };
struct CUgraphExec_st { int magic; /* 0x6E */ struct CUgraph_st *from; int n;
                        struct fake_node nodes[128]; int destroyed; };
static int valid_graph(CUgraph g) { return known(g) && g->magic == 0x6A && !g->destroyed; }
static int valid_exec(CUgraphExec x) { return known(x) && x->magic == 0x6E && !x->destroyed; }
static void set_node(struct fake_node *nd, const CUDA_KERNEL_NODE_PARAMS *p) {
  nd->func = (struct fake_func *)p->func;
  unsigned d[7] = {p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY,
                   p->blockDimZ, p->sharedMemBytes};
  memcpy(nd->dims, d, sizeof d);
  pack_args(nd->func, nd->vals, p->kernelParams);
}

EXPORT CUresult cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size) {
  BEGIN(cuFuncGetParamInfo);
  struct fake_func *ff = (struct fake_func *)f;
  if (!ff || ff->magic != 0xF0) RETURN(INVALID_HANDLE);
  size_t sizes[GRAPH_MAXARGS];
  int n = param_sizes_of(ff, sizes);
  if (n < 0) RETURN(801); /* CUDA_ERROR_NOT_SUPPORTED */
  if ((int)i >= n) RETURN(INVALID_VALUE);
  size_t o = 0;
  for (size_t k = 0; k < i; ++k) o += sizes[k];
  *off = o;
  *size = sizes[i];
  RETURN(0);
}
EXPORT CUresult cuGraphCreate(CUgraph *pg, unsigned int flags) {
  BEGIN(cuGraphCreate);
  if (flags) RETURN(INVALID_VALUE);
  RS_CHECK(fake_ctx_error(current())); /* reset */
  CUgraph g = calloc(1, sizeof *g);
  g->magic = 0x6A;
  remember(g);
  *pg = g;
  RETURN(0);
}
EXPORT CUresult cuGraphDestroy(CUgraph g) {
  BEGIN(cuGraphDestroy);
  if (!valid_graph(g)) RETURN(INVALID_HANDLE);
  g->destroyed = 1;
  RETURN(0);
}
EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode *pn, CUgraph g, const CUgraphNode *deps,
                                        size_t ndeps, const CUDA_KERNEL_NODE_PARAMS *p) {
  BEGIN(cuGraphAddKernelNode);
  (void)deps;
  if (!valid_graph(g) || g->n >= 128) RETURN(INVALID_VALUE);
  struct fake_func *ff = (struct fake_func *)p->func;
  if (!ff || ff->magic != 0xF0) RETURN(INVALID_VALUE);
  struct fake_node *nd = &g->nodes[g->n++];
  nd->magic = 0x90DE;
  nd->ndeps = (int)ndeps;
  set_node(nd, p);
  *pn = (CUgraphNode)nd;
  RETURN(0);
}
EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *px, CUgraph g, unsigned long long flags) {
  BEGIN(cuGraphInstantiate);
  if (!current()) RETURN(INVALID_CONTEXT); /* the library pushes first (bare launches: context.h) */
  if (!valid_graph(g) || flags) RETURN(INVALID_VALUE);
  CUgraphExec x = calloc(1, sizeof *x);
  x->magic = 0x6E;
  x->from = g;
  x->n = g->n;
  memcpy(x->nodes, g->nodes, sizeof x->nodes);
  remember(x);
  fake_born(x, current()); /* reset */
  g_live_execs++;
  *px = x;
  RETURN(0);
}
EXPORT CUresult cuGraphExecDestroy(CUgraphExec x) {
  BEGIN(cuGraphExecDestroy);
  if (!valid_exec(x)) RETURN(INVALID_HANDLE);
  x->destroyed = 1;
  g_live_execs--;
  RETURN(0);
}
EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec x, CUgraphNode n,
                                                  const CUDA_KERNEL_NODE_PARAMS *p) {
  BEGIN(cuGraphExecKernelNodeSetParams);
  if (!current()) RETURN(INVALID_CONTEXT); /* as cuGraphInstantiate */
  if (!valid_exec(x)) RETURN(INVALID_HANDLE);
  struct fake_node *gn = (struct fake_node *)n;
  long i = gn - x->from->nodes;
  if (i < 0 || i >= x->n) RETURN(INVALID_VALUE);
  set_node(&x->nodes[i], p);
  RETURN(0);
}
static int g_graph_launch_hold; /* under g_lock: cuGraphLaunch waits while set (contention test) */
EXPORT void fake_hold_graph_launches(int on) {
  pthread_mutex_lock(&g_lock);
  g_graph_launch_hold = on;
  pthread_mutex_unlock(&g_lock);
}
static long g_in_graph_launch; /* threads waiting inside cuGraphLaunch */
EXPORT long fake_in_graph_launch(void) { return __atomic_load_n(&g_in_graph_launch, __ATOMIC_ACQUIRE); }
EXPORT CUresult cuGraphLaunch(CUgraphExec x, CUstream s) {
  __atomic_fetch_add(&g_in_graph_launch, 1, __ATOMIC_ACQ_REL);
  for (;;) { /* a launch the driver is still busy with, without holding the fake's lock */
    pthread_mutex_lock(&g_lock);
    int hold = g_graph_launch_hold;
    pthread_mutex_unlock(&g_lock);
    if (!hold) break;
    sched_yield();
  }
  __atomic_fetch_sub(&g_in_graph_launch, 1, __ATOMIC_ACQ_REL);
  BEGIN(cuGraphLaunch);
  if (cap_absorb(s)) RETURN(0); /* fake_capture.h */
  if (!valid_exec(x)) RETURN(INVALID_HANDLE);
  RS_CHECK(fake_obj_error(x)); /* reset */
  for (int i = 0; i < x->n; ++i) {
    CUcontext cx = NULL; /* with no context current: the stream's (launch_common) */
    int r = launch_common(x->nodes[i].func, s, &cx);
    if (r) RETURN(r);
    memset(g_last_launch, 0, sizeof g_last_launch);
    for (int k = 0; k < 7; ++k) g_last_launch[k] = x->nodes[i].dims[k];
    fake_globals_launch(x->nodes[i].func, NULL, x->nodes[i].vals);
    record_args(x->nodes[i].vals);
    if (exec_on()) { /* the node's copied argument values, laid out by pack_args */
      const unsigned char *v = x->nodes[i].vals;
      void *args[3] = {(void *)v, (void *)(v + 8), (void *)(v + 16)};
      x_launch(x->nodes[i].func->lib->names[x->nodes[i].func->index], args, s, current());
    }
  }
  RETURN(0);
}
#endif /* FAKECUDA_NO_GRAPH */

#include "fake_neighbour.h" /* cuMemGetInfo, memory pools, capture modes (issue 19) */
