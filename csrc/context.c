/* context.c - per-thread default device, per-device primary contexts, context scopes
 * (see context.h for the rules and the locking). */
#include "context.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "config.h"
#include "driver.h"
#include "report.h"

static _Thread_local int tl_device;     /* this thread's default device, once set */
static _Thread_local int tl_device_set; /* mgpuSetDefaultDevice was called on this thread */
static pthread_once_t g_pdev_once = PTHREAD_ONCE_INIT;
static int g_process_device;            /* default for threads that never set one; written once
                                           under g_pdev_once (MGPU_CACHED_DEVICE) */

static const char *const k_rank_vars[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                          "SLURM_LOCALID", "MPI_LOCALRANKID",
                                          "MV2_COMM_WORLD_LOCAL_RANK", "PMI_LOCAL_RANK"};

/* MGPU_CACHED_DEVICE: unset -> 0 (no driver call); N -> N; local-rank -> the launcher's local
 * rank modulo the device count (the driver is initialised for the count). */
static void process_device_init(void) {
  const char *spec = mc_config()->device;
  if (!spec) return;
  char *end = NULL;
  long n = strtol(spec, &end, 10);
  if (end != spec && !*end) {
    g_process_device = n < 0 ? 0 : (int)n;
    return;
  }
  if (strcmp(spec, "local-rank") != 0) {
    mc_message("MGPU_CACHED_DEVICE='%s' is neither a device ordinal nor 'local-rank': device 0",
               spec);
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

static int process_device(void) {
  pthread_once(&g_pdev_once, process_device_init);
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
static int g_smem_optin[MC_MAX_DEVICES];   /* 0 = not queried yet; no lock: racing queries store
                                              the same value, with release */

int mc_thread_device(void) {
  /* HIP: the stock ROCm wrapper has no default device of its own (mgpuSetDefaultDevice is
   * hipSetDevice) and runs every call on the thread's current HIP device, so that is the device
   * (a program that picks its GPU with hipSetDevice, e.g. one per MPI rank, keeps working). */
  /* mc_backend() is one atomic load; only before the driver is loaded does this load it. */
  if (mc_backend() == MC_BACKEND_HIP || (!mc_driver_loaded() && mc_backend_is_hip())) {
    if (!tl_device_set && mc_config()->device) return process_device();
    int d = 0;
    if (mc_hip.hipGetDevice(&d) == 0) return d;
  }
  if (tl_device_set) return tl_device;
  return process_device();
}
void mc_set_thread_device(int device) {
  tl_device = device;
  tl_device_set = 1;
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
  if (r == 0) __atomic_store_n(&g_ctx[device], c, __ATOMIC_RELEASE);
  pthread_cond_broadcast(&g_dev_done);
  pthread_mutex_unlock(&g_dev_lock);
  if (r != 0) return MC_FAIL(call, r); /* a waiting thread then tries itself */
  *ctx = c;
  return MC_OK;
}

mc_status mc_device_max_smem_optin(int device, int *bytes) {
  if (device < 0 || device >= mc_device_count()) return MC_FAIL("cuDeviceGet", MC_E_BAD_DEVICE);
  int v = __atomic_load_n(&g_smem_optin[device], __ATOMIC_ACQUIRE);
  if (v > 0) {
    *bytes = v;
    return MC_OK;
  }
  CUdevice dev = 0;
  MC_CU_TRY("cuDeviceGet", mc_cu.cuDeviceGet(&dev, device));
  MC_CU_TRY("cuDeviceGetAttribute",
            mc_cu.cuDeviceGetAttribute(&v, MC_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                       dev));
  __atomic_store_n(&g_smem_optin[device], v, __ATOMIC_RELEASE);
  *bytes = v;
  return MC_OK;
}

mc_status mc_ctx_enter(int device, mc_ctx_scope *scope) {
  scope->pushed = 0;
  CUcontext want = NULL;
  mc_status st = mc_device_context(device, &want);
  if (MC_FAILED(st)) return st;
  CUcontext cur = NULL;
  MC_CU_TRY("cuCtxGetCurrent", mc_cu.cuCtxGetCurrent(&cur));
  if (cur == want) return MC_OK;
  MC_CU_TRY("cuCtxPushCurrent", mc_cu.cuCtxPushCurrent(want));
  scope->pushed = 1;
  return MC_OK;
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
}
