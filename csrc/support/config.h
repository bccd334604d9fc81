/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* config.h - run-time configuration: every environment variable the library reads, parsed in one
 * place (config.c), once, from the table below.
 *
 * To add a variable, add one line to MC_CONFIG_VARS:
 *
 *   X(field, KIND, "MGPU_CACHED_NAME", "default", "help: what it does (one sentence)")
 *
 * which gives the field `mc_config()->field`, the parsing with its error message, the entry in
 * `mgpu-cached --help` and in the table the exported mgpu_cached_config_* functions describe (the
 * README's table is checked against it by tests/test_config.py). KIND is one of
 *
 *   FLAG    int 0/1: 1, 0, true, false, on, off, yes, no (any case); default "0" or "1"
 *   COUNT   unsigned long long, decimal digits
 *   BYTES   unsigned long long, digits with an optional K, M or G suffix (powers of 1024; a
 *           trailing B or iB is accepted: 512MiB)
 *   PATH    const char * (a pointer into the environment, or the default)
 *   CHOICE  int, the index of the value in the default text "first|second|..." (the first is
 *           the default); matched exactly (lower case)
 *   PRESENT int, 1 when the variable is set at all, even empty (the stock wrapper's test)
 *   DEVICE  int, a device ordinal (decimal digits, at most INT_MAX), MC_CFG_DEVICE_LOCAL_RANK for
 *           "local-rank", MC_CFG_DEVICE_UNSET when unset (default "")
 *
 * An empty value is the default (except for PRESENT). A value that does not parse, or overflows,
 * prints one line on stderr naming the variable, the value and the default used instead. A
 * COUNT variable listed in MC_CONFIG_RANGES is clamped into its range, with one line
 * saying so. A name in the environment that starts with MGPU_CACHED_ and is neither in the table
 * nor in config.c's short list of names other tools read (build_runtime.py's) is reported in one
 * line, with the closest known name. All of these lines are printed once per process, when the
 * configuration is read (a child forked after that inherits it and prints nothing).
 * The structure is filled on first use and never changes afterwards, so readers need no lock.
 */
#ifndef MGPU_CACHED_CONFIG_H
#define MGPU_CACHED_CONFIG_H

#define MC_CONFIG_VARS(X)                                                                          \
  X(disabled, FLAG, "MGPU_CACHED_DISABLE", "0",                                                    \
    "every mgpu* call behaves exactly like the stock wrapper (same driver calls), for A/B runs")  \
  /* backend: the choices in the order of mc_backend_id (backend.h), auto = MC_BACKEND_NONE */   \
  X(backend, CHOICE, "MGPU_CACHED_BACKEND", "auto|cuda|hip",                                       \
    "the backend: cuda or hip (auto: CUDA if libcuda.so.1 loads and sees a GPU, else HIP; the " \
    "HIP runtime is looked for only without CUDA, with /dev/kfd, or when named)")                 \
  X(driver_path, PATH, "MGPU_CACHED_CUDA_DRIVER", "libcuda.so.1",                                  \
    "the CUDA driver library to load; set explicitly, a failure to load it is an error")          \
  X(hip_path, PATH, "MGPU_CACHED_HIP_RUNTIME", "libamdhip64.so",                                   \
    "the HIP runtime library to load; set explicitly, a failure to load it is an error")          \
  X(hip_nonblocking, FLAG, "MGPU_CACHED_HIP_NONBLOCKING_STREAMS", "0",                             \
    "pooled HIP streams are non-blocking (default: blocking, as the stock ROCm wrapper's)")       \
  X(hip_managed, FLAG, "MGPU_CACHED_HIP_MANAGED", "0",                                             \
    "HIP: host_shared allocations are hipMallocManaged (default: hipMalloc, as the stock ROCm "   \
    "wrapper's)")                                                                                   \
  X(module_cache, COUNT, "MGPU_CACHED_MODULE_CACHE", "256",                                        \
    "unreferenced modules kept loaded for their next load, least recently released unloaded "     \
    "first (0: unload at the last mgpuModuleUnload, as stock)")                                     \
  X(hit_check, CHOICE, "MGPU_CACHED_HIT_CHECK", "auto|full",                                        \
    "auto: a cache hit on a blob in a read-only segment of a loaded object skips the byte "         \
    "comparison while no object was unloaded since its last check; full: every hit "                \
    "compares the whole blob")                                                                      \
  X(stream_handles, CHOICE, "MGPU_CACHED_STREAM_HANDLES", "driver|tagged",                        \
    "driver: mgpuStreamCreate/mgpuEventCreate return driver objects, as stock; tagged: the "      \
    "library's own handles (needed by MGPU_CACHED_STREAM_CAP and MGPU_CACHED_CHAIN)")             \
  X(stream_cap, COUNT, "MGPU_CACHED_STREAM_CAP", "64",                                             \
    "tagged handles only: driver streams per device above which a bind takes the driver stream "  \
    "of an idle live handle (0: no cap)")                                                           \
  X(stream_query, FLAG, "MGPU_CACHED_STREAM_QUERY", "0",                                           \
    "always ask the driver whether a driver stream is idle before pooling it, also after a "      \
    "synchronization that proves it idle")                                                          \
  X(pool_spare_after, COUNT, "MGPU_CACHED_POOL_SPARE_AFTER", "32",                              \
    "a create that finds no idle stream (event) makes a new one beside the one given back, "     \
    "without polling it, only after the device's first N creates of the kind (those poll: a new " \
    "driver stream beside a live one costs the H100 120-270 us; 0 or 1: from the second)")        \
  X(pool_poll_fresh, FLAG, "MGPU_CACHED_POOL_POLL_FRESH", "0",                                  \
    "1: a synchronisation also polls the object its thread gave back just before (by default it "  \
    "is left for later: a thread that destroys a stream and synchronises another at once most "   \
    "often has nothing left to wait for, and the ~1.5 us query would delay the program)")          \
  X(graph, FLAG, "MGPU_CACHED_GRAPH", "1",                                                         \
    "launches on the library's streams go through one-node graph execs (0: cuLaunchKernel)")     \
  X(graph_execs, COUNT, "MGPU_CACHED_GRAPH_EXECS", "8",                                            \
    "graph execs kept per driver stream, least recently used replaced (1 to 64)")             \
  X(bare_launch, FLAG, "MGPU_CACHED_BARE_LAUNCH", "1",                                         \
    "a launch on one of the library's streams in a thread with no current context pushes no "    \
    "context (the stream names it; 0: pushed and popped, as stock)")                                \
  X(graph_after, COUNT, "MGPU_CACHED_GRAPH_AFTER", "4",                                            \
    "a kernel's exec is built at its Nth launch that finds none (its earlier launches take "      \
    "cuLaunchKernel: a later exec's build paid back after 3-4 launches on the H100; chain "       \
    "replay's prepared execs excepted)")                                                            \
  X(graph_threads, COUNT, "MGPU_CACHED_GRAPH_THREADS", "2",                                       \
    "threads that may take the graph path side by side (1 to 3; more launching threads all take " \
    "cuLaunchKernel: the driver serialises graph launches, H100: 1.2-1.3x the stream path's "   \
    "throughput at 2 threads, 0.6-0.9x at 4 and more)")                                          \
  X(graph_first_after, COUNT, "MGPU_CACHED_GRAPH_FIRST_AFTER", "100",                              \
    "the process's first exec is built only once the process has made this many launches (the " \
    "driver's first instantiation, ~0.2 ms on the H100, is paid back after 75-117 launches)")    \
  X(chain, FLAG, "MGPU_CACHED_CHAIN", "0",                                                         \
    "opt-in chain replay: launches on a stream held back until the next observation point and "  \
    "a repeated sequence replayed as one graph")                                                    \
  X(allocator, FLAG, "MGPU_CACHED_ALLOCATOR", "1",                                                 \
    "the caching allocator behind mgpuMemAlloc/mgpuMemFree (0: the stock driver calls)")          \
  X(allocator_cache_bytes, BYTES, "MGPU_CACHED_ALLOCATOR_CACHE_BYTES", "2G",                       \
    "bytes the caching allocator keeps per device for reuse (suffixes K, M, G; 0 keeps nothing)") \
  X(ignore_host_shared, FLAG, "MGPU_CACHED_IGNORE_HOST_SHARED", "0",                               \
    "mgpuMemAlloc ignores isHostShared: for code generated by LLVM 14-17, which passes two "      \
    "arguments")                                                                                    \
  X(device, DEVICE, "MGPU_CACHED_DEVICE", "",                                                       \
    "default device of threads that never call mgpuSetDefaultDevice: N, or local-rank (the "     \
    "launcher's LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID, MPI_LOCALRANKID, ... "     \
    "modulo the device count)")                                                                     \
  X(cusparse_path, PATH, "MGPU_CACHED_CUSPARSE", "",                                               \
    "the cuSPARSE library to load (default: searched: CUDA toolkit, nvidia wheels, system)")     \
  X(cusparselt_path, PATH, "MGPU_CACHED_CUSPARSELT", "",                                           \
    "the cuSPARSELt library to load (default: searched like cuSPARSE)")                          \
  X(cusparselt_struct_bytes, COUNT, "MGPU_CACHED_CUSPARSELT_STRUCT_BYTES", "0",                    \
    "size of cuSPARSELt's opaque structs (0: from the loaded version: 11024 up to 0.5, 512 from " \
    "0.6)")                                                                                         \
  X(allocator_zero, FLAG, "MGPU_CACHED_ALLOCATOR_ZERO", "1",                                       \
    "reused blocks are cleared before they are handed out, reading as zeros like a fresh "       \
    "allocation (0: not cleared)")                                                                  \
  X(allocator_sync_direct_max, BYTES, "MGPU_CACHED_ALLOCATOR_SYNC_DIRECT_MAX", "1M",               \
    "device allocations on the NULL stream of at most this many bytes are the stock cuMemAlloc, " \
    "never cached: up to 1 MiB the driver's pair beside other small blocks costs less than "      \
    "clearing a reused block (0: all cached)")                                                      \
  X(allocator_ordered, FLAG, "MGPU_CACHED_ALLOCATOR_ORDERED", "0",                                 \
    "opt-in: a device allocation on a stream may take a block freed on that stream before the "  \
    "device-wide wait (stream-ordered; only for programs that follow MLIR's stream order)")       \
  X(allocator_oom_wait_ms, COUNT, "MGPU_CACHED_ALLOCATOR_OOM_WAIT_MS", "5000",                     \
    "how long an allocation that ran out of memory waits for the reclaimer to give cached "      \
    "blocks back before it reports out of memory")                                                  \
  X(allocator_reclaim_us, COUNT, "MGPU_CACHED_ALLOCATOR_RECLAIM_US", "50",                         \
    "after a free on a stream the library enqueued work on and has not synchronised since, the " \
    "reclaimer gathers frees for this long (microseconds) before its round (0: never)")         \
  X(allocator_headroom, COUNT, "MGPU_CACHED_ALLOCATOR_HEADROOM", "25",                             \
    "percent of the device's memory the cache leaves to other CUDA users: when the device's free " \
    "memory minus the cache falls below it, the cache is given back (0: no check; at most 100)")    \
  X(stock_sync, FLAG, "MGPU_CACHED_STOCK_SYNC", "0",                                               \
    "stock's implicit device waits: mgpuMemFree with a stream and mgpuModuleUnload wait for the " \
    "device (cuCtxSynchronize) before returning, as the stock wrapper's cuMemFree/cuModuleUnload") \
  X(stats_at_exit, FLAG, "MGPU_CACHED_STATS", "0", "print the counters on stderr at exit")         \
  X(stats_file, PATH, "MGPU_CACHED_STATS_FILE", "",                                                \
    "write the counters as JSON to this file at exit (%p in the name: the process id)")           \
  X(verbose, FLAG, "MGPU_CACHED_VERBOSE", "0", "print cache events (loads, replaced blobs)")        \
  /* the timeline trace (trace.h): parsed from trace.c's constructor when MGPU_CACHED_TRACE is   \
   * set; NVTX_INJECTION64_PATH at the first traced call */                                        \
  X(trace_file, PATH, "MGPU_CACHED_TRACE", "",                                                     \
    "write a timeline of every mgpu* call as Chrome trace-event JSON to this file at exit (%p in " \
    "the name: the process id)")                                                                    \
  X(trace_gpu, FLAG, "MGPU_CACHED_TRACE_GPU", "0",                                                 \
    "the trace also times each kernel, copy and memset on the GPU (two pooled events around each)") \
  X(trace_limit, COUNT, "MGPU_CACHED_TRACE_LIMIT", "1048576",                                      \
    "trace records kept (about 100 bytes each, whole chunks of 256; at most 268435456); later "   \
    "ones are counted as dropped")                                                                                      \
  X(nvtx_injection, PATH, "NVTX_INJECTION64_PATH", "",                                             \
    "(set by Nsight Systems) the NVTX tool: each mgpu* call pushes an NVTX range named after its " \
    "kernel or call")                                                                               \
  X(stock_debug, PRESENT, "MLIR_CUDA_DEBUG", "",                                                   \
    "(stock behaviour) the stock wrapper's debug prints, when set at all")

#define MC_CFG_TYPE_FLAG int
#define MC_CFG_TYPE_COUNT unsigned long long
#define MC_CFG_TYPE_BYTES unsigned long long
#define MC_CFG_TYPE_PATH const char *
#define MC_CFG_TYPE_CHOICE int
#define MC_CFG_TYPE_PRESENT int
#define MC_CFG_TYPE_DEVICE int

/* MGPU_CACHED_DEVICE (kind DEVICE) besides an ordinal: */
#define MC_CFG_DEVICE_UNSET (-1)      /* unset or invalid: device 0, no driver call */
#define MC_CFG_DEVICE_LOCAL_RANK (-2) /* "local-rank": the launcher's local rank (context.c) */

/* Ranges of COUNT variables: R(field, minimum, maximum). A value outside is clamped, with one
 * line on stderr. The users of these fields rely on the range (no clamp of their own). */
#define MC_CFG_GRAPH_EXECS_MAX 64           /* graph execs per driver stream (graph_launch.c) */
#define MC_CFG_TRACE_LIMIT_MAX (1ULL << 28) /* trace records (trace.c's chunk table) */
#define MC_CONFIG_RANGES(R)                                                                        \
  R(graph_execs, 1, MC_CFG_GRAPH_EXECS_MAX)                                                        \
  R(graph_threads, 1, 3)                                                                           \
  R(allocator_headroom, 0, 100) /* percent of the device's memory */                               \
  R(trace_limit, 0, MC_CFG_TRACE_LIMIT_MAX)

typedef struct mc_config_t {
#define MC_CFG_FIELD(field, kind, name, dflt, help) MC_CFG_TYPE_##kind field; /* name */
  MC_CONFIG_VARS(MC_CFG_FIELD)
#undef MC_CFG_FIELD
} mc_config_t;

/* The index of each variable in the table: MC_CFG_<field>. */
typedef enum {
#define MC_CFG_INDEX(field, kind, name, dflt, help) MC_CFG_##field,
  MC_CONFIG_VARS(MC_CFG_INDEX)
#undef MC_CFG_INDEX
  MC_CFG_COUNT
} mc_config_var;

/* The configuration; the first call reads the environment (thread-safe) and reports bad values.
 * Inline: after the first call one acquire load (the launch path asks for it several times). */
extern const mc_config_t *mc_config_ready_; /* NULL until the environment was read (config.c) */
const mc_config_t *mc_config_first(void);
static inline const mc_config_t *mc_config(void) {
  const mc_config_t *c = __atomic_load_n(&mc_config_ready_, __ATOMIC_ACQUIRE);
  return c ? c : mc_config_first();
}

/* A variable that other software defines and the library only reads (a launcher's LOCAL_RANK,
 * CUDA_HOME, HOME, VIRTUAL_ENV, CONDA_PREFIX, the driver's CUDA_FORCE_PTX_JIT): read here too, so
 * config.c stays the one place that reads the environment. NULL when unset. */
const char *mc_config_foreign_env(const char *name);

/* 1 when the variable was set to a valid, non-empty value (an explicit request). */
int mc_config_explicit(mc_config_var var);

/* 1 when the variable is set, non-empty, in the environment now; parses nothing (for the trace's
 * constructor, which reads the configuration at load only when the trace is asked for). */
int mc_config_is_set(mc_config_var var);

/* True when MGPU_CACHED_DISABLE is set: the hot-path test of every ABI entry point (inline: one
 * load once the configuration was read). */
static inline int mc_disabled(void) { return mc_config()->disabled; }

#endif
