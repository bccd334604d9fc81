/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* context.c - per-thread default device, per-device primary contexts, context scopes
 * (see context.h for the rules and the locking). */
#include "platform/context.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "platform/backend.h"
#include "support/config.h"
#include "platform/driver.h"
#include "support/report.h"
#include "support/stats.h"
#include "support/thread.h"

static _Thread_local struct {
  int device; /* this thread's default device, once set */
  int set;    /* mgpuSetDefaultDevice was called on this thread */
} tl_dev;
static pthread_once_t g_pdev_once = PTHREAD_ONCE_INIT;
static int g_process_device;            /* default for threads that never set one; written once
                                           under g_pdev_once (MGPU_CACHED_DEVICE) */

static const char *const k_rank_vars[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                          "SLURM_LOCALID", "MPI_LOCALRANKID",
                                          "MV2_COMM_WORLD_LOCAL_RANK", "PMI_LOCAL_RANK"};

/* MGPU_CACHED_DEVICE (parsed by config.c): unset -> 0 (no driver call); N -> N; local-rank -> the
 * launcher's local rank modulo the device count (the driver is initialised for the count). */
static void process_device_init(void) {
  int spec = mc_config()->device;
  if (spec == MC_CFG_DEVICE_UNSET) return;
  if (spec >= 0) {
    g_process_device = spec;
    return;
  }
  const char *var = NULL, *val = NULL;
  for (size_t i = 0; i < sizeof k_rank_vars / sizeof *k_rank_vars && !val; ++i) {
    const char *v = mc_config_foreign_env(k_rank_vars[i]);
    if (v && *v) var = k_rank_vars[i], val = v;
  }
  if (!val) {
    mc_debug("MGPU_CACHED_DEVICE=local-rank: no local rank in the environment: device 0");
    return;
  }
  char *end = NULL;
  long rank = strtol(val, &end, 10);
  if (end == val || *end || rank < 0) {
    mc_message("MGPU_CACHED_DEVICE=local-rank: %s='%s' is not a rank: device 0", var, val);
    return;
  }
  int count = 0;
  if (mc_backend_is_hip()) {
    count = mc_hip_device_count();
  } else if (!MC_FAILED(mc_runtime_init())) {
    count = mc_device_count();
  }
  if (count <= 0) {
    mc_message("MGPU_CACHED_DEVICE=local-rank: no device to choose from: device 0");
    return;
  }
  g_process_device = (int)(rank % count);
  if (mc_backend_is_hip()) mc_hip.hipSetDevice(g_process_device);
  mc_debug("MGPU_CACHED_DEVICE=local-rank: %s=%ld of %d devices: device %d", var, rank, count,
           g_process_device);
}

static int g_pdev_ready; /* atomic: process_device_init ran (mc_once) */

static int process_device(void) {
  mc_once(&g_pdev_once, &g_pdev_ready, process_device_init);
  return g_process_device;
}

/* Initialisation (driver load, cuInit, device count) runs once per process, and again in a forked
 * child (mc_context_fork_child): a state word instead of a pthread_once, which cannot be reset.
 * The initialising thread runs it without g_init_lock; others wait on g_init_done. */
static pthread_mutex_t g_init_lock = PTHREAD_MUTEX_INITIALIZER; /* guards g_init_state changes */
static pthread_cond_t g_init_done = PTHREAD_COND_INITIALIZER;
static int g_init_state;                   /* INIT_*; atomic: read lock-free once INIT_DONE */
static mc_status g_init_status;            /* result, written before INIT_DONE is stored */
static int g_device_count;                 /* written before INIT_DONE is stored */
enum { INIT_NONE = 0, INIT_RUNNING = 1, INIT_DONE = 2 };

/* Primary contexts: retained by one thread per device, without g_dev_lock (a context creation
 * takes long); other threads that need the same device wait on g_dev_done. */
static pthread_mutex_t g_dev_lock = PTHREAD_MUTEX_INITIALIZER; /* guards g_retaining */
static pthread_cond_t g_dev_done = PTHREAD_COND_INITIALIZER;
static CUcontext g_ctx[MC_MAX_DEVICES];    /* retained primary contexts; published with release */
static unsigned char g_retaining[MC_MAX_DEVICES]; /* a thread is retaining it; under g_dev_lock */
static unsigned long long g_ctx_id[MC_MAX_DEVICES]; /* faults: see the end of the file */
static void faults_fork_child(void);
static int g_smem_optin[MC_MAX_DEVICES];   /* 0 = not queried yet; no lock: racing queries store
                                              the same value, with release */

/* context.h's inline answer: -1 until published, the process device while it answers every
 * thread, -2 for good once some thread called mgpuSetDefaultDevice (HIP: never published).
 * Published with a compare-and-swap from -1 only, so a thread's mc_set_thread_device (which
 * stores -2 before it sets its device) is never undone: that thread's later calls take the slow
 * way. Another thread may still read the process device for a moment after that store, which is
 * its answer anyway. */
#define DEVICE_SET_BY_A_THREAD (-2)
int mc_thread_device_fast_ = -1;

int mc_thread_device_slow(void) {
  /* HIP: the stock ROCm wrapper has no default device of its own (mgpuSetDefaultDevice is
   * hipSetDevice) and runs every call on the thread's current HIP device, so that is the device
   * (a program that picks its GPU with hipSetDevice, e.g. one per MPI rank, keeps working). */
  /* mc_backend() is one atomic load; only before the driver is loaded is the choice asked. */
  mc_backend_id backend = mc_backend();
  if (backend == MC_BACKEND_HIP || (backend == MC_BACKEND_NONE && mc_backend_is_hip())) {
    if (!tl_dev.set && mc_config()->device != MC_CFG_DEVICE_UNSET) return process_device();
    int d = 0;
    if (mc_hip.hipGetDevice(&d) == 0) return d;
  }
  /* No thread set a default device yet (most programs never do): no thread-local look-up, and
   * once the CUDA driver is loaded the answer is published for the inline way. */
  if (__atomic_load_n(&mc_thread_device_fast_, __ATOMIC_ACQUIRE) != DEVICE_SET_BY_A_THREAD) {
    int d = process_device();
    if (backend == MC_BACKEND_CUDA) {
      int unset = -1;
      __atomic_compare_exchange_n(&mc_thread_device_fast_, &unset, d, 0, __ATOMIC_SEQ_CST,
                                  __ATOMIC_RELAXED);
    }
    return d;
  }
  const __typeof__(tl_dev) *dev = MC_TLS_ADDR(tl_dev);
  if (dev->set) return dev->device;
  return process_device();
}

void mc_set_thread_device(int device) {
  /* before this thread's own: its next call takes the thread-local way */
  __atomic_store_n(&mc_thread_device_fast_, DEVICE_SET_BY_A_THREAD, __ATOMIC_SEQ_CST);
  tl_dev.device = device;
  tl_dev.set = 1;
}

void mc_hip_set_default_device(int device) {
  if (!mc_backend_is_hip()) return;
  mc_report_cu("hipSetDevice(device)", mc_hip.hipSetDevice(device));
}

static mc_status runtime_init(int *count_out) {
  mc_status st = mc_driver_load();
  if (MC_FAILED(st)) return st;
  CUresult r = mc_cu.cuInit(0);
  if (r != 0) return MC_FAIL("cuInit", r);
  int count = 0;
  r = mc_cu.cuDeviceGetCount(&count);
  if (r != 0) return MC_FAIL("cuDeviceGetCount", r);
  *count_out = count > MC_MAX_DEVICES ? MC_MAX_DEVICES : count;
  return MC_OK;
}

mc_status mc_runtime_init(void) {
  if (__atomic_load_n(&g_init_state, __ATOMIC_ACQUIRE) == INIT_DONE) return g_init_status;
  pthread_mutex_lock(&g_init_lock);
  while (__atomic_load_n(&g_init_state, __ATOMIC_RELAXED) == INIT_RUNNING)
    pthread_cond_wait(&g_init_done, &g_init_lock);
  if (__atomic_load_n(&g_init_state, __ATOMIC_RELAXED) == INIT_NONE) {
    __atomic_store_n(&g_init_state, INIT_RUNNING, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&g_init_lock);
    int count = 0;
    mc_status st = runtime_init(&count); /* driver load and cuInit: without the lock */
    pthread_mutex_lock(&g_init_lock);
    g_init_status = st;
    g_device_count = MC_FAILED(st) ? 0 : count;
    __atomic_store_n(&g_init_state, INIT_DONE, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&g_init_done);
  }
  pthread_mutex_unlock(&g_init_lock);
  return g_init_status;
}

int mc_device_count(void) {
  return __atomic_load_n(&g_init_state, __ATOMIC_ACQUIRE) == INIT_DONE ? g_device_count : 0;
}

mc_status mc_device_context(int device, CUcontext *ctx) {
  mc_status st = mc_runtime_init();
  if (MC_FAILED(st)) return st;
  if (device < 0 || device >= g_device_count) return MC_FAIL("cuDeviceGet", MC_E_BAD_DEVICE);
  CUcontext c = __atomic_load_n(&g_ctx[device], __ATOMIC_ACQUIRE);
  if (c) {
    *ctx = c;
    return MC_OK;
  }
  pthread_mutex_lock(&g_dev_lock);
  while (!g_ctx[device] && g_retaining[device]) pthread_cond_wait(&g_dev_done, &g_dev_lock);
  c = g_ctx[device];
  if (c) {
    pthread_mutex_unlock(&g_dev_lock);
    *ctx = c;
    return MC_OK;
  }
  g_retaining[device] = 1;
  pthread_mutex_unlock(&g_dev_lock);
  CUdevice dev = 0;
  const char *call = "cuDeviceGet";
  CUresult r = mc_cu.cuDeviceGet(&dev, device);
  if (r == 0) {
    call = "cuDevicePrimaryCtxRetain";
    r = mc_cu.cuDevicePrimaryCtxRetain(&c, dev); /* creates the context: without the lock */
  }
  pthread_mutex_lock(&g_dev_lock);
  g_retaining[device] = 0;
  if (r == 0) {
    unsigned long long id = 0; /* faults: the id the caches are filled under (context.h) */
    if (mc_cu.cuCtxGetId && mc_cu.cuCtxGetId(c, &id) == 0)
      __atomic_store_n(&g_ctx_id[device], id, __ATOMIC_RELEASE);
    __atomic_store_n(&g_ctx[device], c, __ATOMIC_RELEASE);
  }
  pthread_cond_broadcast(&g_dev_done);
  pthread_mutex_unlock(&g_dev_lock);
  if (r != 0) return MC_FAIL(call, r); /* a waiting thread then tries itself */
  *ctx = c;
  return MC_OK;
}

/* Attribute `attrib` of `device` (an ordinal below mc_device_count()). cuDeviceGet and
 * cuDeviceGetAttribute are not among the calls a stream capture refuses: no relaxed-mode bracket
 * (capture.h) is needed around them. */
static mc_status device_attribute(int device, int attrib, int *v) {
  CUdevice dev = 0;
  MC_CU_TRY("cuDeviceGet", mc_cu.cuDeviceGet(&dev, device));
  MC_CU_TRY("cuDeviceGetAttribute", mc_cu.cuDeviceGetAttribute(v, attrib, dev));
  return MC_OK;
}

mc_status mc_device_max_smem_optin(int device, int *bytes) {
  if (device < 0 || device >= mc_device_count()) return MC_FAIL("cuDeviceGet", MC_E_BAD_DEVICE);
  int v = __atomic_load_n(&g_smem_optin[device], __ATOMIC_ACQUIRE);
  if (v <= 0) {
    mc_status st =
        device_attribute(device, MC_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &v);
    if (MC_FAILED(st)) return st;
    __atomic_store_n(&g_smem_optin[device], v, __ATOMIC_RELEASE);
  }
  *bytes = v;
  return MC_OK;
}

static int g_sm[MC_MAX_DEVICES]; /* compute capability (major * 10 + minor), 0 until known;
                                    atomic */

int mc_device_sm(int device) {
  if (device < 0 || device >= MC_MAX_DEVICES || device >= mc_device_count() ||
      mc_backend() != MC_BACKEND_CUDA)
    return 0;
  int v = __atomic_load_n(&g_sm[device], __ATOMIC_ACQUIRE);
  if (v > 0) return v;
  int major = 0, minor = 0;
  mc_status st = device_attribute(device, MC_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &major);
  if (!MC_FAILED(st))
    st = device_attribute(device, MC_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &minor);
  if (MC_FAILED(st) || major <= 0 || minor < 0) return 0;
  v = major * 10 + minor;
  __atomic_store_n(&g_sm[device], v, __ATOMIC_RELEASE);
  return v;
}

/* Threads whose programs keep no context current (a launch from a thread of their own, as in
 * benchmarks/conc/launch_threads.c) push at every enter: the driver's cuCtxGetCurrent before each
 * push is a call stock does not make. After a look found another context current (or none), the
 * thread pushes `tl_ctx.push.ctx` straight away for CTX_PUSH_RUN enters, then looks again (so a
 * program that makes the context current later stops the pushes). Thread-local. */
#define CTX_PUSH_RUN 256
typedef struct {
  CUcontext ctx;  /* the context the last look did not find current; NULL: look */
  unsigned left;  /* enters into ctx that push without a look */
} push_run;
/* This thread's enters: one thread-local look-up for both fields. */
static _Thread_local struct {
  int last_device; /* the device this thread last entered (faults) */
  push_run push;   /* see above */
} tl_ctx;

/* mc_device_context's answer once the device's context is retained (one load and a bound
 * check, inline on the enter paths); NULL: ask mc_device_context. */
static inline CUcontext ctx_ready(int device) {
  if (__atomic_load_n(&g_init_state, __ATOMIC_ACQUIRE) != INIT_DONE || device < 0 ||
      device >= g_device_count)
    return NULL;
  return __atomic_load_n(&g_ctx[device], __ATOMIC_ACQUIRE);
}

/* What both enters begin with: an empty scope, the device noted as this thread's last (faults),
 * and the device's primary context in *want. *t: this thread's enter state. */
static inline __attribute__((always_inline)) mc_status enter_begin(int device, mc_ctx_scope *scope,
                                                                   __typeof__(tl_ctx) **t,
                                                                   CUcontext *want) {
  scope->pushed = 0;
  scope->bare = 0;
  *t = MC_TLS_ADDR(tl_ctx); /* one look-up (support/thread.h) */
  (*t)->last_device = device;
  *want = ctx_ready(device);
  return *want ? MC_OK : mc_device_context(device, want);
}

mc_status mc_ctx_enter(int device, mc_ctx_scope *scope) {
  __typeof__(tl_ctx) *t;
  CUcontext want;
  mc_status st = enter_begin(device, scope, &t, &want);
  if (MC_FAILED(st)) return st;
  push_run *run = &t->push;
  if (run->ctx != want || run->left == 0) {
    CUcontext cur = NULL;
    MC_CU_TRY("cuCtxGetCurrent", mc_cu.cuCtxGetCurrent(&cur));
    if (cur == want) {
      run->ctx = NULL;
      return MC_OK;
    }
    run->ctx = want;
    run->left = CTX_PUSH_RUN;
  } else {
    --run->left;
  }
  MC_CU_TRY("cuCtxPushCurrent", mc_cu.cuCtxPushCurrent(want));
  scope->pushed = 1;
  return MC_OK;
}

int mc_ctx_bare_refused_; /* context.h; atomic: the driver refused a bare launch (never reset) */

mc_status mc_ctx_enter_bare(int device, mc_ctx_scope *scope) {
  __typeof__(tl_ctx) *t;
  CUcontext want;
  mc_status st = enter_begin(device, scope, &t, &want);
  if (MC_FAILED(st)) return st;
  CUcontext cur = NULL;
  MC_CU_TRY("cuCtxGetCurrent", mc_cu.cuCtxGetCurrent(&cur));
  if (cur == want) return MC_OK;
  if (!cur) {
    scope->bare = 1;
    scope->want = want;
    return MC_OK;
  }
  MC_CU_TRY("cuCtxPushCurrent", mc_cu.cuCtxPushCurrent(want));
  scope->pushed = 1;
  return MC_OK;
}

mc_status mc_ctx_settle(mc_ctx_scope *scope) {
  if (!scope->bare) return MC_OK;
  scope->bare = 0;
  MC_CU_TRY("cuCtxPushCurrent", mc_cu.cuCtxPushCurrent(scope->want));
  scope->pushed = 1;
  return MC_OK;
}

int mc_ctx_bare_refused_now(mc_ctx_scope *scope) {
  if (!__atomic_exchange_n(&mc_ctx_bare_refused_, 1, __ATOMIC_RELAXED))
    mc_debug("the driver refused a launch with no context current: every launch pushes");
  return !MC_FAILED(mc_ctx_settle(scope));
}

void mc_ctx_leave(mc_ctx_scope *scope) {
  if (!scope->pushed) return;
  CUcontext popped = NULL;
  mc_cu.cuCtxPopCurrent(&popped);
  scope->pushed = 0;
}

/* ---- fork ---- */

void mc_context_fork_prepare(void) {
  pthread_mutex_lock(&g_init_lock);
  pthread_mutex_lock(&g_dev_lock);
}

void mc_context_fork_parent(void) {
  pthread_mutex_unlock(&g_dev_lock);
  pthread_mutex_unlock(&g_init_lock);
}

void mc_context_fork_child(void) {
  pthread_mutex_unlock(&g_dev_lock);
  pthread_mutex_unlock(&g_init_lock);
  /* Waiters and initialisations in progress were the parent's threads: gone here. */
  pthread_cond_init(&g_init_done, NULL);
  pthread_cond_init(&g_dev_done, NULL);
  /* The parent's contexts are not the child's: forgotten (never released), and the driver is
   * initialised afresh (cuInit, device count) at the child's first call. */
  __atomic_store_n(&g_init_state, INIT_NONE, __ATOMIC_RELEASE);
  g_init_status = MC_OK;
  g_device_count = 0;
  for (int d = 0; d < MC_MAX_DEVICES; ++d) {
    __atomic_store_n(&g_ctx[d], NULL, __ATOMIC_RELEASE);
    g_retaining[d] = 0;
    __atomic_store_n(&g_smem_optin[d], 0, __ATOMIC_RELEASE);
  }
  faults_fork_child();
}

/* ---- faults: context resets and sticky errors (see context.h) ----
 * State per device: g_fault[d] (FAULT_* bits, atomic), g_ctx_id[d] (cuCtxGetId of the context the
 * caches were filled in; 0 unknown; written by the recovering thread under g_fault_lock).
 * mc_ctx_trouble_count counts devices with a nonzero g_fault (atomic). Recovery runs under
 * g_fault_lock (a driver retain under it: rare, and no other lock of the library is held then). */
enum { FAULT_SUSPECT = 1, FAULT_BROKEN = 2 };
#define MC_MAX_RESET_HOOKS 16
static pthread_mutex_t g_fault_lock = PTHREAD_MUTEX_INITIALIZER; /* recovery, hook registration */
static void (*g_reset_hooks[MC_MAX_RESET_HOOKS])(int); /* atomic pointers; registered once each */
static int g_fault[MC_MAX_DEVICES];                    /* atomic FAULT_* bits */
static int g_sticky[MC_MAX_DEVICES];                   /* atomic: the sticky error seen (FAULT_BROKEN) */
int mc_ctx_trouble_count;                              /* atomic: devices with g_fault set
                                                          (context.h reads it) */

void mc_ctx_on_reset(void (*fn)(int device)) {
  pthread_mutex_lock(&g_fault_lock);
  for (int i = 0; i < MC_MAX_RESET_HOOKS; ++i) {
    void (*h)(int) = __atomic_load_n(&g_reset_hooks[i], __ATOMIC_ACQUIRE);
    if (h == fn) break;
    if (!h) {
      __atomic_store_n(&g_reset_hooks[i], fn, __ATOMIC_RELEASE);
      break;
    }
  }
  pthread_mutex_unlock(&g_fault_lock);
}

static void fault_set(int device, int bits) {
  if (device < 0 || device >= MC_MAX_DEVICES) return;
  int old = __atomic_fetch_or(&g_fault[device], bits, __ATOMIC_ACQ_REL);
  if (!old) __atomic_fetch_add(&mc_ctx_trouble_count, 1, __ATOMIC_ACQ_REL);
}

static void fault_clear(int device) { /* g_fault_lock held */
  __atomic_store_n(&g_sticky[device], 0, __ATOMIC_RELEASE);
  int old = __atomic_exchange_n(&g_fault[device], 0, __ATOMIC_ACQ_REL);
  if (old) __atomic_fetch_sub(&mc_ctx_trouble_count, 1, __ATOMIC_ACQ_REL);
}

/* The results after which every later call in the context fails the same way (the CUDA driver
 * API's documentation: "the process is left in an inconsistent state"). */
static int sticky(int r) {
  switch (r) {
  case 700: /* CUDA_ERROR_ILLEGAL_ADDRESS */
  case 702: /* CUDA_ERROR_LAUNCH_TIMEOUT */
  case 710: /* CUDA_ERROR_ASSERT */
  case 714: /* CUDA_ERROR_HARDWARE_STACK_ERROR */
  case 715: /* CUDA_ERROR_ILLEGAL_INSTRUCTION */
  case 716: /* CUDA_ERROR_MISALIGNED_ADDRESS */
  case 717: /* CUDA_ERROR_INVALID_ADDRESS_SPACE */
  case 718: /* CUDA_ERROR_INVALID_PC */
  case 719: /* CUDA_ERROR_LAUNCH_FAILED */
    return 1;
  default:
    return 0;
  }
}

void mc_ctx_note_device(int device) { tl_ctx.last_device = device; }

void mc_ctx_note_result(int result) {
  if (mc_backend() != MC_BACKEND_CUDA) return;
  if (result == 709) { /* CUDA_ERROR_CONTEXT_IS_DESTROYED: which context, cuCtxGetId tells */
    int n = mc_device_count();
    for (int d = 0; d < n; ++d)
      if (__atomic_load_n(&g_ctx[d], __ATOMIC_ACQUIRE)) fault_set(d, FAULT_SUSPECT);
  } else if (sticky(result)) {
    int d = tl_ctx.last_device;
    if (d >= 0 && d < MC_MAX_DEVICES) __atomic_store_n(&g_sticky[d], result, __ATOMIC_RELEASE);
    fault_set(d, FAULT_BROKEN);
  }
}

int mc_ctx_broken_now(int device) {
  return device >= 0 && device < MC_MAX_DEVICES &&
         (__atomic_load_n(&g_fault[device], __ATOMIC_ACQUIRE) & FAULT_BROKEN);
}

/* The context of `device` is not the one the caches hold objects of: forget them, retain it
 * again (g_fault_lock held). */
static void recover_locked(int device) {
  for (int i = 0; i < MC_MAX_RESET_HOOKS; ++i) {
    void (*h)(int) = __atomic_load_n(&g_reset_hooks[i], __ATOMIC_ACQUIRE);
    if (h) h(device);
  }
  CUdevice dev = 0;
  CUcontext c = NULL;
  if (mc_cu.cuDeviceGet(&dev, device) == 0 && mc_cu.cuDevicePrimaryCtxRetain(&c, dev) == 0)
    __atomic_store_n(&g_ctx[device], c, __ATOMIC_RELEASE);
  unsigned long long id = 0;
  __atomic_store_n(&g_ctx_id[device],
                   (c && mc_cu.cuCtxGetId && mc_cu.cuCtxGetId(c, &id) == 0) ? id : 0ull,
                   __ATOMIC_RELEASE);
  fault_clear(device);
  mc_stat_add(MC_STAT_context_recoveries, 1);
  mc_debug("device %d: its primary context was reset: caches dropped, context retained again",
           device);
}

/* Check `device` now (g_fault_lock held): 1 when it was recovered. */
static int check_locked(int device, int suspect) {
  CUcontext c = __atomic_load_n(&g_ctx[device], __ATOMIC_ACQUIRE);
  if (!c) return 0;
  if (!mc_cu.cuCtxGetId) { /* no way to ask: a CONTEXT_IS_DESTROYED seen means a reset */
    if (suspect) {
      recover_locked(device);
      return 1;
    }
    return 0;
  }
  unsigned long long id = 0;
  CUresult r = mc_cu.cuCtxGetId(c, &id);
  if (r == 0 && g_ctx_id[device] == 0) /* first look: the id of record */
    __atomic_store_n(&g_ctx_id[device], id, __ATOMIC_RELEASE);
  if (r == 709 || (r == 0 && id != g_ctx_id[device])) {
    recover_locked(device);
    return 1;
  }
  if (suspect) { /* the CONTEXT_IS_DESTROYED came from elsewhere: this context is fine */
    int old = __atomic_fetch_and(&g_fault[device], ~FAULT_SUSPECT, __ATOMIC_ACQ_REL);
    if (old == FAULT_SUSPECT) __atomic_fetch_sub(&mc_ctx_trouble_count, 1, __ATOMIC_ACQ_REL);
  }
  return 0;
}

void mc_ctx_verify(int device) {
  if (device < 0 || device >= MC_MAX_DEVICES || mc_backend() != MC_BACKEND_CUDA) return;
  CUcontext c = __atomic_load_n(&g_ctx[device], __ATOMIC_ACQUIRE);
  if (!c) return; /* not retained yet: nothing cached for it */
  int f = __atomic_load_n(&g_fault[device], __ATOMIC_ACQUIRE);
  if (!f && mc_cu.cuCtxGetId) { /* the common case: one cuCtxGetId, no lock */
    unsigned long long id = 0;
    unsigned long long want = __atomic_load_n(&g_ctx_id[device], __ATOMIC_ACQUIRE);
    if (mc_cu.cuCtxGetId(c, &id) == 0 && want && id == want) return;
  } else if (!f) {
    return;
  }
  pthread_mutex_lock(&g_fault_lock);
  check_locked(device, (f & FAULT_SUSPECT) != 0);
  pthread_mutex_unlock(&g_fault_lock);
}

int mc_ctx_sticky(int device) {
  if (!mc_ctx_broken(device)) return 0;
  int r = __atomic_load_n(&g_sticky[device], __ATOMIC_ACQUIRE);
  return r ? r : 719; /* CUDA_ERROR_LAUNCH_FAILED when the code was not kept */
}

int mc_ctx_alive(int device) {
  if (device < 0 || device >= MC_MAX_DEVICES || mc_backend() != MC_BACKEND_CUDA) return 1;
  CUcontext c = __atomic_load_n(&g_ctx[device], __ATOMIC_ACQUIRE);
  if (!c || !mc_cu.cuCtxGetId) return 1;
  unsigned long long id = 0;
  unsigned long long want = __atomic_load_n(&g_ctx_id[device], __ATOMIC_ACQUIRE);
  if (mc_cu.cuCtxGetId(c, &id) != 0) return 0;
  return !want || id == want;
}

void mc_ctx_check_suspects(void) {
  if (!__atomic_load_n(&mc_ctx_trouble_count, __ATOMIC_RELAXED)) return;
  int n = mc_device_count();
  for (int d = 0; d < n; ++d) {
    int f = __atomic_load_n(&g_fault[d], __ATOMIC_ACQUIRE);
    if (!(f & FAULT_SUSPECT)) continue;
    pthread_mutex_lock(&g_fault_lock);
    f = __atomic_load_n(&g_fault[d], __ATOMIC_ACQUIRE);
    if (f & FAULT_SUSPECT) check_locked(d, 1);
    pthread_mutex_unlock(&g_fault_lock);
  }
}

static void faults_fork_child(void) {
  pthread_mutex_init(&g_fault_lock, NULL);
  for (int d = 0; d < MC_MAX_DEVICES; ++d) {
    __atomic_store_n(&g_fault[d], 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g_sticky[d], 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g_ctx_id[d], 0ull, __ATOMIC_RELEASE);
  }
  __atomic_store_n(&mc_ctx_trouble_count, 0, __ATOMIC_RELEASE);
}
