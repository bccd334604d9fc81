/* config.c - run-time configuration from the environment (see config.h). */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static mc_config_t g_config;              /* written once under g_once, read-only afterwards */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_disabled_cached = -1;        /* copy of g_config.disabled for the hot path */

static int env_flag(const char *name) {
  const char *v = getenv(name);
  if (!v || !*v) return 0;
  return !(strcmp(v, "0") == 0 || strcmp(v, "false") == 0 || strcmp(v, "off") == 0 ||
           strcmp(v, "no") == 0);
}

static void read_environment(void) {
  g_config.disabled = env_flag("MGPU_CACHED_DISABLE");
  g_config.verbose = env_flag("MGPU_CACHED_VERBOSE");
  g_config.stats_at_exit = env_flag("MGPU_CACHED_STATS");
  const char *f = getenv("MGPU_CACHED_STATS_FILE");
  g_config.stats_file = (f && *f) ? f : NULL;
  const char *d = getenv("MGPU_CACHED_CUDA_DRIVER");
  g_config.driver_path = (d && *d) ? d : "libcuda.so.1";
  g_config.stock_debug = getenv("MLIR_CUDA_DEBUG") != NULL;
  const char *cap = getenv("MGPU_CACHED_STREAM_CAP");
  char *end = NULL;
  unsigned long c = (cap && *cap) ? strtoul(cap, &end, 10) : 64;
  g_config.stream_cap = (cap && *cap && (!end || *end)) ? 64 : c; /* unparsable: the default */
  __atomic_store_n(&g_disabled_cached, g_config.disabled, __ATOMIC_RELEASE);
}

const mc_config_t *mc_config(void) {
  pthread_once(&g_once, read_environment);
  return &g_config;
}

int mc_disabled(void) {
  int d = __atomic_load_n(&g_disabled_cached, __ATOMIC_ACQUIRE);
  if (d >= 0) return d;
  return mc_config()->disabled;
}
