/* driver.c - loads the CUDA driver library at run time and resolves the symbol table (driver.h). */
#include "driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "config.h"

mc_cuda_fns mc_cu;                          /* written once under g_once */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_loaded;                        /* 1 after a successful load, written under g_once */
static char g_error[512];                   /* why the load failed, written under g_once */

static void load_driver(void) {
  const char *path = mc_config()->driver_path;
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = dlerror();
    snprintf(g_error, sizeof g_error, "cannot load the CUDA driver '%s': %s", path,
             e ? e : "unknown error");
    return;
  }
#define MC_RESOLVE(field, name, ret, params, args, required)                                      \
  mc_cu.field = (ret(*) params)dlsym(lib, #name);                                                  \
  if (!mc_cu.field && (required)) {                                                                \
    snprintf(g_error, sizeof g_error, "the CUDA driver '%s' has no entry point '%s'", path, #name);\
    return;                                                                                        \
  }
  MC_CUDA_SYMBOLS(MC_RESOLVE)
#undef MC_RESOLVE
  /* The library handle is never closed: entry points stay valid until the process ends. */
  __atomic_store_n(&g_loaded, 1, __ATOMIC_RELEASE);
}

mc_status mc_driver_load(void) {
  pthread_once(&g_once, load_driver);
  return g_loaded ? MC_OK : MC_FAIL("dlopen", MC_E_NO_DRIVER);
}

int mc_driver_loaded(void) { return __atomic_load_n(&g_loaded, __ATOMIC_ACQUIRE); }

const char *mc_driver_error(void) { return g_error[0] ? g_error : NULL; }

const char *mc_driver_path(void) { return mc_config()->driver_path; }
