/* config.h - run-time configuration, read once from the environment.
 *
 *   MGPU_CACHED_DISABLE=1        every mgpu* call behaves like the stock wrapper (same driver calls)
 *   MGPU_CACHED_CUDA_DRIVER=path the CUDA driver library to load (default libcuda.so.1)
 *   MGPU_CACHED_VERBOSE=1        print cache and pool events to stderr
 *   MGPU_CACHED_STATS=1          print the statistics to stderr at exit
 *   MGPU_CACHED_STATS_FILE=path  write the statistics as JSON to path at exit
 *   MLIR_CUDA_DEBUG              (stock mode) the stock wrapper's debug prints
 *   MGPU_CACHED_STREAM_CAP=n     driver streams per device above which idle joined streams are
 *                                shared (pool.c; default 64, 0 = never share)
 *
 * The structure is filled on first use and never changes afterwards, so readers need no lock.
 */
#ifndef MGPU_CACHED_CONFIG_H
#define MGPU_CACHED_CONFIG_H

typedef struct mc_config_t {
  int disabled;            /* MGPU_CACHED_DISABLE: stock behaviour */
  int verbose;             /* MGPU_CACHED_VERBOSE */
  int stats_at_exit;       /* MGPU_CACHED_STATS */
  const char *stats_file;  /* MGPU_CACHED_STATS_FILE or NULL (points into the environment) */
  const char *driver_path; /* MGPU_CACHED_CUDA_DRIVER or "libcuda.so.1" */
  int stock_debug;         /* MLIR_CUDA_DEBUG set */
  unsigned long stream_cap; /* MGPU_CACHED_STREAM_CAP (default 64; 0 = no cap) */
} mc_config_t;

/* The configuration; the first call reads the environment (thread-safe). */
const mc_config_t *mc_config(void);

/* True when MGPU_CACHED_DISABLE is set: the hot-path test of every ABI entry point. */
int mc_disabled(void);

#endif
