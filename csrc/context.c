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

#define MC_MAX_DEVICES 64

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
    const char *v = getenv(k_rank_vars[i]);
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

static pthread_once_t g_init_once = PTHREAD_ONCE_INIT;
static mc_status g_init_status;            /* result of runtime_init, written under g_init_once */
static int g_device_count;                 /* written under g_init_once */
static pthread_mutex_t g_dev_lock = PTHREAD_MUTEX_INITIALIZER; /* guards the writes to g_ctx */
static CUcontext g_ctx[MC_MAX_DEVICES];    /* retained primary contexts; published with release */
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

static void runtime_init(void) {
  mc_status st = mc_driver_load();
  if (MC_FAILED(st)) {
    g_init_status = st;
    return;
  }
  CUresult r = mc_cu.cuInit(0);
  if (r != 0) {
    g_init_status = MC_FAIL("cuInit", r);
    return;
  }
  int count = 0;
  r = mc_cu.cuDeviceGetCount(&count);
  if (r != 0) {
    g_init_status = MC_FAIL("cuDeviceGetCount", r);
    return;
  }
  g_device_count = count > MC_MAX_DEVICES ? MC_MAX_DEVICES : count;
  g_init_status = MC_OK;
}

mc_status mc_runtime_init(void) {
  pthread_once(&g_init_once, runtime_init);
  return g_init_status;
}

int mc_device_count(void) { return g_device_count; }

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
  c = g_ctx[device];
  CUresult r = 0;
  const char *call = NULL;
  if (!c) {
    CUdevice dev = 0;
    call = "cuDeviceGet";
    r = mc_cu.cuDeviceGet(&dev, device);
    if (r == 0) {
      call = "cuDevicePrimaryCtxRetain";
      r = mc_cu.cuDevicePrimaryCtxRetain(&c, dev);
    }
    if (r == 0) __atomic_store_n(&g_ctx[device], c, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&g_dev_lock);
  if (r != 0) return MC_FAIL(call, r);
  *ctx = c;
  return MC_OK;
}

mc_status mc_device_max_smem_optin(int device, int *bytes) {
  if (device < 0 || device >= g_device_count) return MC_FAIL("cuDeviceGet", MC_E_BAD_DEVICE);
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
