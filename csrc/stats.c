/* stats.c - statistics counters, the exported mgpu_cached_* interface, and the at-exit report.
 *
 * The at-exit report (MGPU_CACHED_STATS, MGPU_CACHED_STATS_FILE) runs from a library destructor and
 * makes no driver call, so it is safe however late it runs.
 */
#include "stats.h"

#include <stdio.h>

#include "backend.h"
#include "allocator.h"
#include "config.h"
#include "driver.h"
#include "report.h"
#include "include/mgpu_cached.h"

#define MC_EXPORT __attribute__((visibility("default")))
#ifndef MGPU_CACHED_VERSION
#define MGPU_CACHED_VERSION "0.1.0"
#endif

uint64_t mc_stats_values[MC_STAT_COUNT];

static const char *const g_names[] = {
#define MC_STATS_NAME(name, desc) #name,
    MC_STATS(MC_STATS_NAME)
#undef MC_STATS_NAME
};
static const char *const g_descriptions[] = {
#define MC_STATS_DESC(name, desc) desc,
    MC_STATS(MC_STATS_DESC)
#undef MC_STATS_DESC
};

MC_EXPORT const char *mgpu_cached_version(void) { return MGPU_CACHED_VERSION; }
MC_EXPORT int mgpu_cached_enabled(void) { return !mc_disabled(); }
MC_EXPORT const char *mgpu_cached_backend(void) {
  mc_driver_load(); /* the choice is made when the driver is loaded */
  return mc_backend_name();
}
MC_EXPORT const char *mgpu_cached_driver_path(void) { return mc_driver_path(); }
MC_EXPORT const char *mgpu_cached_driver_error(void) {
  mc_driver_load();
  return mc_driver_error();
}
MC_EXPORT int mgpu_cached_stats_count(void) { return MC_STAT_COUNT; }
MC_EXPORT const char *mgpu_cached_stats_name(int i) {
  return (i >= 0 && i < MC_STAT_COUNT) ? g_names[i] : NULL;
}
MC_EXPORT const char *mgpu_cached_stats_description(int i) {
  return (i >= 0 && i < MC_STAT_COUNT) ? g_descriptions[i] : NULL;
}
MC_EXPORT int mgpu_cached_stats_read(uint64_t *values, int n) {
  if (!values || n <= 0) return 0;
  int count = n < MC_STAT_COUNT ? n : MC_STAT_COUNT;
  for (int i = 0; i < count; ++i) values[i] = __atomic_load_n(&mc_stats_values[i], __ATOMIC_RELAXED);
  return count;
}

MC_EXPORT uint64_t mgpu_cached_allocator_release(void) {
  uint64_t n = 0;
  mc_report("mgpu_cached_allocator_release", mc_alloc_release_all(&n), NULL);
  return n;
}

static void write_json(FILE *f) {
  fprintf(f, "{\"version\": \"%s\", \"enabled\": %s, \"backend\": \"%s\", \"stats\": {",
          MGPU_CACHED_VERSION, mc_disabled() ? "false" : "true", mc_backend_name());
  for (int i = 0; i < MC_STAT_COUNT; ++i)
    fprintf(f, "%s\"%s\": %llu", i ? ", " : "", g_names[i],
            (unsigned long long)__atomic_load_n(&mc_stats_values[i], __ATOMIC_RELAXED));
  fprintf(f, "}}\n");
}

__attribute__((destructor)) static void mc_stats_at_exit(void) {
  const mc_config_t *cfg = mc_config();
  if (cfg->stats_at_exit) {
    fprintf(stderr, "mgpu-cached statistics (%s, backend %s):\n",
            mc_disabled() ? "disabled" : "enabled", mc_backend_name());
    for (int i = 0; i < MC_STAT_COUNT; ++i)
      fprintf(stderr, "  %-22s %llu\n", g_names[i],
              (unsigned long long)__atomic_load_n(&mc_stats_values[i], __ATOMIC_RELAXED));
  }
  if (cfg->stats_file) {
    FILE *f = fopen(cfg->stats_file, "w");
    if (f) {
      write_json(f);
      fclose(f);
    }
  }
}
