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

/* A byte count with an optional K/M/G suffix (powers of 1024); `dflt` if unset or malformed. */
static unsigned long long env_bytes(const char *name, unsigned long long dflt) {
  const char *v = getenv(name);
  if (!v || !*v) return dflt;
  char *end = NULL;
  unsigned long long n = strtoull(v, &end, 10);
  if (end == v) return dflt;
  int shift = 0;
  if (*end == 'k' || *end == 'K') shift = 10;
  else if (*end == 'm' || *end == 'M') shift = 20;
  else if (*end == 'g' || *end == 'G') shift = 30;
  else if (*end) return dflt;
  if (shift && end[1] && strcmp(end + 1, "B") != 0 && strcmp(end + 1, "iB") != 0) return dflt;
  return n << shift;
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
  const char *b = getenv("MGPU_CACHED_BACKEND"); /* values as mc_backend_id (backend.h) */
  g_config.backend = !b ? 0 : strcmp(b, "cuda") == 0 ? 1 : strcmp(b, "hip") == 0 ? 2 : 0;
  const char *h = getenv("MGPU_CACHED_HIP_RUNTIME");
  g_config.hip_path = (h && *h) ? h : "libamdhip64.so";
  g_config.hip_nonblocking = env_flag("MGPU_CACHED_HIP_NONBLOCKING_STREAMS");
  const char *a = getenv("MGPU_CACHED_ALLOCATOR");
  g_config.allocator = !(a && *a && !env_flag("MGPU_CACHED_ALLOCATOR"));
  g_config.allocator_cache_bytes = env_bytes("MGPU_CACHED_ALLOCATOR_CACHE_BYTES", 2ULL << 30);
  const char *az = getenv("MGPU_CACHED_ALLOCATOR_ZERO");
  g_config.allocator_zero = !(az && *az && !env_flag("MGPU_CACHED_ALLOCATOR_ZERO"));
  g_config.allocator_ordered = env_flag("MGPU_CACHED_ALLOCATOR_ORDERED");
  const char *ow = getenv("MGPU_CACHED_ALLOCATOR_OOM_WAIT_MS");
  char *owend = NULL;
  unsigned long owv = (ow && *ow) ? strtoul(ow, &owend, 10) : 5000;
  g_config.allocator_oom_wait_ms = (ow && *ow && (!owend || *owend)) ? 5000 : owv;
  const char *ru = getenv("MGPU_CACHED_ALLOCATOR_RECLAIM_US");
  char *ruend = NULL;
  unsigned long ruv = (ru && *ru) ? strtoul(ru, &ruend, 10) : 0;
  g_config.allocator_reclaim_us = (ru && *ru && (!ruend || *ruend)) ? 0 : ruv;
  g_config.stream_query = env_flag("MGPU_CACHED_STREAM_QUERY");
  const char *mcache = getenv("MGPU_CACHED_MODULE_CACHE");
  char *mend = NULL;
  unsigned long long mc = (mcache && *mcache) ? strtoull(mcache, &mend, 10) : 256;
  g_config.module_cache = (mcache && *mcache && (!mend || *mend)) ? 256 : mc; /* unparsable: 256 */
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
