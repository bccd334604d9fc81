/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* stats.h - cache and pool statistics, read through the exported mgpu_cached_stats_* interface
 * (include/mgpu_cached.h) and printed or written at exit on request.
 *
 * MC_STATS(X): X(name, description). Counters are monotonic except the gauges (MC_STAT_GAUGES:
 * live_*, pooled_*, alloc_bytes_*), which go up and down.
 *
 * Per-thread counters (issue 21): a counter is incremented on every launch, load and lookup, so
 * one shared atomic word per counter would bounce its cache line between the cores of threads
 * launching side by side. Each thread instead owns a block of counters (stats.c), written by that
 * thread only with a plain load and store (no read-modify-write, no shared line); a read sums
 * every block. A block outlives its thread: at thread exit it is marked free, keeps its values
 * (still summed) and is taken over by the next new thread, which goes on adding to it. Gauges stay
 * one shared atomic word each: they go up in one thread and down in another, and a sum of blocks
 * read one after the other could show the decrement without the increment (a negative gauge).
 * No lock anywhere: blocks are published on a list with a compare-and-swap and never freed.
 */
#ifndef MGPU_CACHED_STATS_H
#define MGPU_CACHED_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "support/thread.h"

#define MC_STATS(X)                                                                           \
  X(module_loads, "mgpuModuleLoad/LoadJIT calls")                                            \
  X(module_hits, "loads answered from the cache (content verified or known unchanged)")     \
  X(module_misses, "loads that loaded a blob into the driver")                               \
  X(module_stale, "cache entries found to hold a different blob at a reused address")        \
  X(module_unloads, "mgpuModuleUnload calls")                                                 \
  X(module_stateful_loads, "driver loads of blobs with module-scope state (never cached)")    \
  X(module_global_uncached, "cached modules taken out of the cache by mgpuModuleGetGlobal")    \
  X(driver_module_loads, "driver module loads, one per device (cuModuleLoadData[Ex])")      \
  X(driver_module_unloads, "driver module unloads (cuModuleUnload)")                          \
  X(verify_bytes, "bytes compared to verify cache hits")                                     \
  X(verify_skips, "cache hits not compared: the blob lies in a read-only segment of a "      \
    "loaded object and no object was unloaded since its last check")                          \
  X(verify_skips_executable, "of those, hits on a blob in the executable's read-only data (no " \
    "loader lock: the executable is never unloaded)")                                           \
  X(function_lookups, "mgpuModuleGetFunction calls")                                          \
  X(function_thread_hits, "mgpuModuleGetFunction calls answered by the thread's own cache")   \
  X(function_resolves, "kernels resolved in a device context (cuModuleGetFunction)")         \
  X(launches, "kernel launches")                                                              \
  X(context_recoveries, "primary contexts found reset and retained again, caches dropped")   \
  X(smem_attribute_sets, "dynamic shared memory limits raised (cuFuncSetAttribute)")         \
  X(stream_creates, "mgpuStreamCreate calls")                                                 \
  X(stream_pool_hits, "streams handed out from the pool")                                    \
  X(driver_stream_creates, "driver streams created (cuStreamCreate)")                        \
  X(stream_destroys, "mgpuStreamDestroy calls")                                               \
  X(live_streams, "streams handed out and not yet destroyed (gauge)")                        \
  X(pooled_streams, "streams idle or draining in the pool (gauge)")                          \
  X(event_creates, "mgpuEventCreate calls")                                                   \
  X(event_pool_hits, "events handed out from the pool")                                      \
  X(driver_event_creates, "driver events created (cuEventCreate)")                           \
  X(event_destroys, "mgpuEventDestroy calls")                                                 \
  X(live_events, "events handed out and not yet destroyed (gauge)")                          \
  X(pooled_events, "events idle or draining in the pool (gauge)")                            \
  X(errors, "errors reported")                                                               \
  X(alloc_bytes_in_use, "bytes mgpuMemAlloc handed out, not yet freed (gauge)")              \
  X(alloc_bytes_cached, "bytes the allocator keeps for reuse (gauge)")                       \
  X(alloc_hits, "allocations served from the allocator's cache")                             \
  X(alloc_ordered_hits, "hits reused stream-ordered on the freeing stream")                  \
  X(alloc_misses, "allocations that called the driver")                                      \
  X(alloc_sync_direct, "NULL-stream device allocations up to "                                 \
    "MGPU_CACHED_ALLOCATOR_SYNC_DIRECT_MAX: the stock cuMemAlloc, never cached")                \
  X(alloc_releases, "cached blocks given back to the driver (cap, out of memory, release)")  \
  X(alloc_oom_retries, "allocations retried after out of memory released the cache")        \
  /* allocator reuse as safe as cuMemFree + cuMemAlloc (trust issue) */                       \
  X(alloc_bytes_pending, "bytes freed on a stream, not yet cleared for reuse (gauge)")       \
  X(alloc_reclaims, "reclaimer rounds (fences of events on the device's streams)")           \
  X(alloc_bytes_zeroed, "bytes of freed blocks cleared before reuse")                        \
  X(alloc_oom_timeouts, "out-of-memory releases not finished within the wait")               \
  X(alloc_lost, "freed blocks never reused: the fence or the clearing failed")               \
  X(alloc_rounds_deferred, "reclaimer rounds put off because a stream was being captured")  \
  X(alloc_headroom_checks, "cuMemGetInfo checks of the device's free memory (headroom)")    \
  X(alloc_headroom_releases, "headroom checks that found too little room: cache given back") \
  X(alloc_lean_frees, "frees near capacity given back at once after the caller's device wait, as stock") \
  X(alloc_untouched_frees, "NULL-stream frees of host_shared blocks no work of the library "    \
                           "could have touched since their allocation: the stock cuMemFree")   \
  X(device_ops, "mgpuMemcpy / mgpuMemset calls and sparse operations (device work that may "   \
                "touch memory; kernels: launches)")                                             \
  /* stream reuse without a query: */                                                         \
  X(stream_query_skips, "driver streams pooled without cuStreamQuery (provably idle after a sync)") \
  /* concurrency (issue 4) */                                                                 \
  X(stream_binds, "stream handles bound to a driver stream (first use, or use after an unbind)") \
  X(stream_reclaims, "driver streams taken from idle live handles at the stream cap")       \
  X(stream_fence_proofs, "given-back streams proven idle by the allocator's fence (no query)")  \
  X(stream_cap_exceeded, "driver streams made above the stream cap (every bound one busy)")      \
  X(module_evictions, "unreferenced modules unloaded beyond MGPU_CACHED_MODULE_CACHE")       \
  X(module_thread_hits, "hits answered by the thread's own cache (no cache lock or shared write)") \
  X(module_lock_takes, "acquisitions of the module cache's lock (none on a thread's cache hits)") \
  /* graph launches (issue 12) */                                                             \
  X(graph_launches, "launches through a one-node graph exec (cuGraphLaunch)")                 \
  X(graph_instantiates, "one-node graph execs made (cuGraphInstantiate)")                     \
  X(graph_updates, "graph launches that updated the node (cuGraphExecKernelNodeSetParams)")   \
  X(graph_update_skips, "graph launches whose node already held the launch")                  \
  X(graph_evictions, "graph execs destroyed beyond MGPU_CACHED_GRAPH_EXECS per stream")       \
  X(graph_full, "launches sent to the stream path: their stream's execs full, none evictable yet") \
  X(graph_disabled_functions, "functions sent back to the stream path after a graph failure") \
  X(graph_contended, "launches sent to the stream path: other threads launched just before") \
  X(graph_launcher_stores, "stores to the shared word of the threads launching lately")     \
  X(graph_first_launches, "launches sent to the stream path before their exec is due "         \
                          "(MGPU_CACHED_GRAPH_AFTER, MGPU_CACHED_GRAPH_FIRST_AFTER)")            \
  X(chain_deferred, "launches deferred by chain replay (MGPU_CACHED_CHAIN=1)")                \
  X(chain_flushes, "deferred segments submitted (at an observation point; full; a head)")     \
  X(chain_heads, "heads of long chains submitted early (chain.c)")                            \
  X(chain_kept_starts, "chains begun on the stream their last synchronisation kept (chain.c)") \
  X(chain_replays, "segments submitted as one launch of a chain graph")                       \
  X(chain_instantiates, "chain graphs made (a segment seen again among the last 8)")         \
  X(chain_node_updates, "chain graph nodes updated before a replay")                         \
  X(alloc_gathers, "reclaimer rounds that first gathered frees (MGPU_CACHED_ALLOCATOR_RECLAIM_US)")

typedef enum {
#define MC_STATS_ENUM(name, desc) MC_STAT_##name,
  MC_STATS(MC_STATS_ENUM)
#undef MC_STATS_ENUM
      MC_STAT_COUNT
} mc_stat_id;

/* The gauges: shared atomic words (see above). */
#define MC_STAT_GAUGES(G)                                                                     \
  G(live_streams) G(pooled_streams) G(live_events) G(pooled_events) G(alloc_bytes_in_use)     \
  G(alloc_bytes_cached) G(alloc_bytes_pending)

static inline int mc_stat_is_gauge(mc_stat_id id) {
  switch (id) {
#define MC_STATS_GAUGE_CASE(name) case MC_STAT_##name:
    MC_STAT_GAUGES(MC_STATS_GAUGE_CASE)
#undef MC_STATS_GAUGE_CASE
    return 1;
  default:
    return 0;
  }
}

/* One thread's counters (stats.c). */
typedef struct mc_stats_block {
  uint64_t v[MC_STAT_COUNT];   /* written by the owning thread only (relaxed load + store); read
                                  by any thread (relaxed loads); gauges' words unused */
  struct mc_stats_block *next; /* the list of every block; immutable once published */
  int owned;                   /* atomic: a live thread owns the block (0: free, to take over) */
} mc_stats_block;

/* The calling thread's block; NULL until its first count (then mc_stats_block_slow). The
 * local-dynamic model (support/thread.h). */
extern _Thread_local mc_stats_block *mc_stats_tl MC_TLS_LOCAL;
mc_stats_block *mc_stats_block_slow(void);
/* Gauges, and every counter of a thread that could not get a block (no memory): atomic words. */
extern uint64_t mc_stats_shared[MC_STAT_COUNT];

/* Told which counter moved: set once at library load by the timeline trace when it is on
 * (trace.c: a traced call notes the counters it moved), NULL otherwise: one load and a predictable
 * branch per count. */
extern void (*mc_stats_observer)(int id);

/* The calling thread's block (made at its first count), or NULL (no memory: shared words). A
 * caller that counts several things in one call, or keeps the block beside other per-thread state
 * (module_cache.c's thread cache), reads it once and counts with mc_stat_add_in. */
static inline mc_stats_block *mc_stats_mine(void) {
  mc_stats_block *b = mc_stats_tl;
  return __builtin_expect(b != NULL, 1) ? b : mc_stats_block_slow();
}

/* Count in block b, the calling thread's (mc_stats_mine), or in the shared words (b NULL). */
static inline void mc_stat_add_in(mc_stats_block *b, mc_stat_id id, int64_t delta) {
  if (b && !mc_stat_is_gauge(id)) /* this thread's word: no other thread writes it */
    __atomic_store_n(&b->v[id], __atomic_load_n(&b->v[id], __ATOMIC_RELAXED) + (uint64_t)delta,
                     __ATOMIC_RELAXED);
  else
    __atomic_fetch_add(&mc_stats_shared[id], (uint64_t)delta, __ATOMIC_RELAXED);
  void (*observer)(int) = mc_stats_observer;
  if (__builtin_expect(observer != NULL, 0)) observer((int)id);
}

static inline void mc_stat_add(mc_stat_id id, int64_t delta) {
  mc_stat_add_in(mc_stat_is_gauge(id) ? NULL : mc_stats_mine(), id, delta);
}

/* A counter's value now: the sum over every thread's block (exited threads' included). A count
 * made by a thread before something that happens before this call (a join, a lock) is in it. */
uint64_t mc_stat_get(mc_stat_id id);
/* Every counter (values[MC_STAT_COUNT]). */
void mc_stats_snapshot(uint64_t *values);
/* Set a counter to `value` (fork children resetting a gauge; the calling thread's block takes up
 * the difference, so only meaningful while no other thread moves the counter). */
void mc_stat_set(mc_stat_id id, uint64_t value);

/* Blocks made so far (owned or free; tests). */
int mc_stats_blocks(void);

/* The backend's name for the reports ("cuda", "hip" or "none"; backend.h: mc_backend_name),
 * registered at library load by the ABI edge (abi/hooks.c); "none" until then. */
void mc_stats_set_backend_name(const char *(*name)(void));

/* fork(): in the child, the statistics file counts from here on, and the blocks of the parent's
 * other threads (absent in the child) are free to take over (fork.c calls it). */
void mc_stats_fork_child(void);

#define MC_STAT_INC(name) mc_stat_add(MC_STAT_##name, 1)
#define MC_STAT_INC_IN(block, name) mc_stat_add_in((block), MC_STAT_##name, 1)
#define MC_STAT_DEC(name) mc_stat_add(MC_STAT_##name, -1)

#endif
