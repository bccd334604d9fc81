/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* driver.c - chooses the backend and loads its library at run time (driver.h, backend.h):
 * the CUDA driver resolved into mc_cu, or the HIP runtime with adapters installed into mc_cu. */
#include "platform/driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "platform/backend.h"
#include "support/config.h"

mc_cuda_fns mc_cu;                          /* written once under g_driver_once */
mc_cuda_extra_fns mc_cu_extra;              /* written once under g_driver_once */
static pthread_once_t g_driver_once = PTHREAD_ONCE_INIT;
int mc_backend_loaded; /* backend.h: the mc_backend_id once its driver loaded, else 0; written
                          once under g_driver_once, with release */
static char g_error[1024];                  /* why the load failed, written under g_driver_once */

/* dlopen the CUDA driver and resolve both tables. 0, or -1 with the reason in err. */
static int open_cuda(const char *path, void **handle, char *err, size_t size) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = dlerror();
    snprintf(err, size, "cannot load the CUDA driver '%s': %s", path, e ? e : "unknown error");
    return -1;
  }
#define MC_RESOLVE(field, name, ret, params, args, required)                                      \
  mc_cu.field = (ret(*) params)dlsym(lib, #name);                                                  \
  if (!mc_cu.field && (required)) {                                                                \
    snprintf(err, size, "the CUDA driver '%s' has no entry point '%s'", path, #name);             \
    memset(&mc_cu, 0, sizeof mc_cu);                                                               \
    return -1;                                                                                     \
  }
  MC_CUDA_SYMBOLS(MC_RESOLVE)
#undef MC_RESOLVE
#define MC_RESOLVE_EXTRA(field, name, ret, params, args, required)                                \
  mc_cu_extra.field = (ret(*) params)dlsym(lib, #name);
  MC_CUDA_EXTRA_SYMBOLS(MC_RESOLVE_EXTRA)
#undef MC_RESOLVE_EXTRA
  *handle = lib;
  return 0;
}

/* Does the loaded CUDA driver see a device? (Only asked when the HIP runtime loads as well.) */
static int cuda_has_devices(void) {
  int n = 0;
  return mc_cu.cuInit(0) == 0 && mc_cu.cuDeviceGetCount(&n) == 0 && n > 0;
}

static void choose(int backend) {
  if (backend == MC_BACKEND_HIP) mc_hip_install_adapters(&mc_cu, &mc_cu_extra);
  /* The library handles are never closed: entry points stay valid until the process ends. */
  __atomic_store_n(&mc_backend_loaded, backend, __ATOMIC_RELEASE); /* backend.h: loaded */
}

static void load_driver(void) {
  const mc_config_t *cfg = mc_config();
  char cuda_err[480] = "", hip_err[480] = "";
  void *cuda = NULL, *hip = NULL;
  if (cfg->backend == MC_BACKEND_CUDA) {
    if (open_cuda(cfg->driver_path, &cuda, g_error, sizeof g_error) == 0) choose(MC_BACKEND_CUDA);
    return;
  }
  if (cfg->backend == MC_BACKEND_HIP) {
    if (mc_hip_open(cfg->hip_path, &hip, g_error, sizeof g_error) == 0) choose(MC_BACKEND_HIP);
    return;
  }
  /* Automatic: CUDA if it loads, unless HIP loads too and CUDA has no device. A library named
   * explicitly (MGPU_CACHED_CUDA_DRIVER, MGPU_CACHED_HIP_RUNTIME) that fails to load is an error,
   * never a silent fall-back to the other backend. Where CUDA loads, HIP can only win with an AMD
   * device, which ROCm serves through /dev/kfd: without that node (and with no HIP runtime named)
   * the HIP runtime is not even looked for, so a CUDA process does not pay a failing dlopen's
   * search (77 paths tried, about 0.1 ms at its first call). */
  int have_cuda = open_cuda(cfg->driver_path, &cuda, cuda_err, sizeof cuda_err) == 0;
  int try_hip = !have_cuda || mc_config_explicit(MC_CFG_hip_path) || access("/dev/kfd", F_OK) == 0;
  int have_hip = try_hip && mc_hip_open(cfg->hip_path, &hip, hip_err, sizeof hip_err) == 0;
  int cuda_missing = !have_cuda && mc_config_explicit(MC_CFG_driver_path);
  int hip_missing = !have_hip && mc_config_explicit(MC_CFG_hip_path);
  if (cuda_missing || hip_missing) {
    snprintf(g_error, sizeof g_error, "%s%s%s%s%s", cuda_missing ? cuda_err : "",
             cuda_missing ? " (set by MGPU_CACHED_CUDA_DRIVER)" : "",
             cuda_missing && hip_missing ? "; " : "", hip_missing ? hip_err : "",
             hip_missing ? " (set by MGPU_CACHED_HIP_RUNTIME)" : "");
    if (have_cuda) memset(&mc_cu, 0, sizeof mc_cu); /* the handles stay open, unused */
    if (have_hip) memset(&mc_hip, 0, sizeof mc_hip);
    return;
  }
  if (have_cuda && (!have_hip || cuda_has_devices() || mc_hip_device_count() == 0)) {
    if (have_hip) {
      memset(&mc_hip, 0, sizeof mc_hip);
      dlclose(hip); /* nothing of it was called but hipGetDeviceCount */
    }
    choose(MC_BACKEND_CUDA);
  } else if (have_hip) {
    choose(MC_BACKEND_HIP);
  } else {
    snprintf(g_error, sizeof g_error, "%s; %s", cuda_err, hip_err);
  }
}

mc_status mc_driver_load(void) {
  pthread_once(&g_driver_once, load_driver);
  return mc_driver_loaded() ? MC_OK : MC_FAIL("dlopen", MC_E_NO_DRIVER);
}

int mc_driver_loaded(void) { return mc_backend() != MC_BACKEND_NONE; }

const char *mc_driver_error(void) { return g_error[0] ? g_error : NULL; }

const char *mc_driver_path(void) {
  const mc_config_t *cfg = mc_config();
  if (mc_backend() == MC_BACKEND_HIP || (mc_backend() == MC_BACKEND_NONE &&
                                         cfg->backend == MC_BACKEND_HIP))
    return cfg->hip_path;
  return cfg->driver_path;
}

const char *mc_backend_name(void) {
  switch (mc_backend()) {
  case MC_BACKEND_CUDA: return "cuda";
  case MC_BACKEND_HIP: return "hip";
  default: /* nothing loaded: the backend asked for, if one was */
    return mc_config()->backend == MC_BACKEND_CUDA  ? "cuda"
           : mc_config()->backend == MC_BACKEND_HIP ? "hip"
                                                    : "none";
  }
}

int mc_backend_is_hip(void) {
  return !MC_FAILED(mc_driver_load()) && mc_backend() == MC_BACKEND_HIP;
}
