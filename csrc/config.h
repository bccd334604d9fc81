/* config.h - run-time configuration, read once from the environment.
 *
 *   MGPU_CACHED_DISABLE=1        every mgpu* call behaves like the stock wrapper (same driver calls)
 *   MGPU_CACHED_CUDA_DRIVER=path the CUDA driver library to load (default libcuda.so.1)
 *   MGPU_CACHED_VERBOSE=1        print cache and pool events to stderr
 *   MGPU_CACHED_STATS=1          print the statistics to stderr at exit
 *   MGPU_CACHED_STATS_FILE=path  write the statistics as JSON to path at exit
 *   MLIR_CUDA_DEBUG              (stock mode) the stock wrapper's debug prints
 *   MGPU_CACHED_BACKEND=cuda|hip force a backend (default: automatic, see backend.h)
 *   MGPU_CACHED_HIP_RUNTIME=path the HIP runtime library to load (default libamdhip64.so)
 *   MGPU_CACHED_HIP_NONBLOCKING_STREAMS=1  pooled HIP streams are non-blocking (default: blocking,
 *                                as the stock ROCm wrapper's; see README "ROCm")
 *   MGPU_CACHED_ALLOCATOR=0      mgpuMemAlloc/mgpuMemFree make the stock driver calls (cuMemAlloc,
 *                                cuMemAllocManaged, cuMemFree) while the rest stays cached
 *   MGPU_CACHED_ALLOCATOR_CACHE_BYTES=n  bytes the caching allocator keeps per device for reuse
 *                                (default 2 GiB; suffixes K, M, G; 0 keeps nothing)
 *   MGPU_CACHED_ALLOCATOR_ZERO=0 reused blocks are not cleared (default: cleared, reading as zeros
 *                                as fresh driver memory does)
 *   MGPU_CACHED_ALLOCATOR_ORDERED=1  a device allocation on a stream may take a block freed on
 *                                that stream before the device-wide wait (stream-ordered reuse;
 *                                only for programs that follow MLIR's stream-ordered rules)
 *   MGPU_CACHED_ALLOCATOR_OOM_WAIT_MS=n  how long an allocation that ran out of memory waits for
 *                                the cached blocks to be given back (default 5000)
 *   MGPU_CACHED_ALLOCATOR_RECLAIM_US=n  the allocator's reclaimer gathers frees for n µs before
 *                                each device-wide wait (default 0)
 *   MGPU_CACHED_MODULE_CACHE=n   unreferenced modules kept loaded for their next load (default
 *                                256; least recently released unloaded first; 0 keeps none)
 *   MGPU_CACHED_STREAM_QUERY=1   a destroyed stream is always queried (cuStreamQuery) before reuse,
 *                                also right after mgpuStreamSynchronize (see "known idle", pool.c)
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
  int backend;             /* MGPU_CACHED_BACKEND: mc_backend_id (0 = automatic) */
  const char *hip_path;    /* MGPU_CACHED_HIP_RUNTIME or "libamdhip64.so" */
  int hip_nonblocking;     /* MGPU_CACHED_HIP_NONBLOCKING_STREAMS */
  int allocator;           /* MGPU_CACHED_ALLOCATOR (default 1): the caching allocator is on */
  unsigned long long allocator_cache_bytes; /* MGPU_CACHED_ALLOCATOR_CACHE_BYTES */
  int allocator_zero;      /* MGPU_CACHED_ALLOCATOR_ZERO (default 1): clear blocks before reuse */
  int allocator_ordered;   /* MGPU_CACHED_ALLOCATOR_ORDERED (default 0): stream-ordered reuse */
  unsigned long allocator_oom_wait_ms; /* MGPU_CACHED_ALLOCATOR_OOM_WAIT_MS (default 5000) */
  unsigned long allocator_reclaim_us; /* MGPU_CACHED_ALLOCATOR_RECLAIM_US (default 0) */
  int stream_query;        /* MGPU_CACHED_STREAM_QUERY: always cuStreamQuery before reusing */
  unsigned long long module_cache; /* MGPU_CACHED_MODULE_CACHE: unreferenced modules kept */
  unsigned long stream_cap; /* MGPU_CACHED_STREAM_CAP (default 64; 0 = no cap) */
} mc_config_t;

/* The configuration; the first call reads the environment (thread-safe). */
const mc_config_t *mc_config(void);

/* True when MGPU_CACHED_DISABLE is set: the hot-path test of every ABI entry point. */
int mc_disabled(void);

#endif
