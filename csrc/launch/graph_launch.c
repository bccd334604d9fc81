/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* graph_launch.c - launches through per-(function, driver stream) one-node graph execs
 * (see graph_launch.h).
 *
 * State. A table of stream entries keyed by driver stream (open addressing, STREAM_SLOTS slots,
 * entries never removed: the pools never destroy a driver stream, so a driver stream value always
 * names the same stream and its execs stay valid; a full table just sends new streams down the
 * stream path). Each stream entry holds at most MGPU_CACHED_GRAPH_EXECS execs (default 4), least
 * recently launched evicted first (cuGraphExecDestroy: the driver frees an exec in flight once its
 * work completes). An exec is keyed by the library's function handle, which is never reused for
 * another kernel (module_cache.h), and by the CUfunction it was built for.
 *
 * Eviction is rate-limited: once a stream's execs are full, an exec is evicted for a new function
 * at most once per EVICT_EVERY launches on the stream; in between, launches of functions without
 * an exec take the stream path. Without the limit, a loop over more kernels than the stream's
 * execs would evict on every launch and pay a graph instantiation (tens of us) each time; with
 * it, at most one per EVICT_EVERY launches, and the execs still follow a change of the hot set.
 *
 * Argument sets. A launch goes through an exec of its function whose node already holds it (no
 * update); otherwise through the function's least recently launched exec, updated. When the launch
 * repeats the values that exec held before its last update (the double-buffer pattern: a step
 * swapping its input and output buffers every launch), a second exec is made instead, once, so
 * both argument sets stay in nodes and no launch needs an update (H100: the update cost the
 * swapping stencil its whole gain, benchmarks/results/h100-below-floor/). Beyond that, a launch
 * that needs an update but repeats values updated in within the stream's last RECENT_MISSES
 * updates (a loop whose allocations rotate among a few blocks: the async step's launches updated
 * 50-90% of the time on the H100) gets an exec of its own, while the function holds fewer than
 * its share of the stream's execs (MGPU_CACHED_GRAPH_EXECS divided among the functions that have
 * execs there), so kernels sharing a stream do not crowd each other out. Values never seen twice
 * never make an exec, so a kernel whose arguments always change costs no instantiation.
 *
 * Functions for which building, updating or launching an exec failed are remembered (a set of
 * CUfunction values) and launched through the stream path from then on.
 *
 * Locking rule. g_graph.lock (a mutex) guards only the insertion of stream entries and of
 * disabled functions; both tables are read without it (atomic slots, entries published with
 * release stores); the early launches' counts (`g_early.seen`, "First launches") take no lock at
 * all (slots set with compare-and-swap, counts with atomic adds). Each stream entry has a try-lock (`busy`) over its exec list and the
 * execs in it; held across cuGraphExecKernelNodeSetParams and cuGraphLaunch (non-blocking
 * driver calls) and never across graph creation or cuGraphInstantiate, which run with no lock
 * held. A launch that finds the entry busy (another thread launching on the same driver stream
 * at this moment) takes the stream path: the two launches are concurrent, so no order between
 * them is lost. So does a launch while another thread is inside a graph update + launch on any
 * stream (g_inflight).
 */
#include "launch/graph_launch.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "platform/backend.h"
#include "platform/capture.h"
#include "support/config.h"
#include "platform/context.h"
#include "platform/driver.h"
#include "support/stats.h"
#include "support/thread.h"

#define STREAM_SLOTS 4096u   /* driver streams with execs (all devices) */
#define DISABLED_SLOTS 1024u /* functions sent down the stream path */
#define SEEN_SLOTS 4096u     /* functions launched without an exec (see "First launches") */
#define MAX_EXECS MC_CFG_GRAPH_EXECS_MAX /* upper bound of MGPU_CACHED_GRAPH_EXECS (config.h) */
#define ARG_SETS 2           /* execs per (function, stream) of the two-set rule (Argument sets) */
#define RECENT_MISSES 32     /* updated launches remembered per stream (their values' hashes) */
#define EVICT_EVERY 256      /* launches on a full stream between two evictions */

typedef struct g_exec {
  const void *key;        /* the library's function handle; immutable */
  CUfunction cf;          /* the function the node launches; immutable */
  CUgraph graph;          /* owned; immutable */
  CUgraphExec exec;       /* owned; immutable */
  CUgraphNode node;       /* the kernel node; immutable */
  mc_graph_dims dims;      /* grid, block, smem the exec's node holds; under the entry's busy */
  mc_graph_dims prev_dims; /* what it held before its last update (has_prev); under busy */
  size_t nparams;         /* argument count from cuFuncGetParamInfo; immutable */
  size_t *off, *size;     /* [nparams] offset in `values` and size of each argument; immutable */
  size_t bytes;           /* sum of size[]; immutable */
  int sizes_known;        /* cuFuncGetParamInfo answered: values can be compared; immutable */
  int has_prev;           /* prev_dims/prev_values hold an earlier launch; under busy */
  unsigned char *values;  /* argument values the node holds; under the entry's busy */
  unsigned char *prev_values; /* [bytes] the values before the last update; under busy */
  uint64_t last_use;      /* entry's tick at the last launch; under the entry's busy */
} g_exec;

typedef struct __attribute__((aligned(64))) g_stream {
  CUstream stream;          /* immutable once published */
  int busy;                 /* atomic try-lock over what follows */
  int n;                    /* execs in use */
  uint64_t tick;            /* launches that reached this entry (either path) */
  uint64_t evicted_at;      /* tick of the last eviction; 0: none yet */
  g_exec *execs[MAX_EXECS]; /* owned */
  uint64_t recent[RECENT_MISSES]; /* hashes of the last updated launches' functions and values;
                                     under busy */
  unsigned nrecent;               /* updates recorded in recent[] (ring position); under busy */
} g_stream;

static struct {
  pthread_mutex_t lock;                 /* insertion into the two tables (rule above) */
  g_stream *streams[STREAM_SLOTS];      /* atomic pointers */
  CUfunction disabled[DISABLED_SLOTS];  /* atomic values */
  int ndisabled;                        /* atomic: entries in disabled[]; stored under the lock.
                                           While 0 no lookup touches the table (its pages stay
                                           untouched: a first call's page faults) */
  int disabled_full;                    /* atomic: the disabled set overflowed: path off */
} g_graph = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The early launches' counts (see "First launches"), apart from g_graph: only launches that find
 * no exec touch them. A function and its count share a slot, so a lookup touches one page. */
static struct {
  struct {
    CUfunction f; /* atomic, set with compare-and-swap */
    uint32_t n;   /* atomic: f's launches that found no exec, counted up to g_after - 1 */
  } seen[SEEN_SLOTS];
} g_early;

/* Threads inside a graph update + launch (atomic). cuGraphLaunch serialises across threads in
 * the driver: measured on the H100 (benchmarks/results/h100-graph/run2/throughput.txt), graph
 * launches from 1 to 16 threads, each on its own stream, stayed at ~390-440k launches/s in all,
 * where cuLaunchKernel scales to 530-600k. So a launch that finds another thread in the graph path
 * takes the stream path instead: both give the same results, and the contended one then costs what
 * it cost before the graph path existed. */
static int g_inflight;

/* The process gate of "First launches": beside the launch path's own statics, whose page every
 * launch touches anyway (no page of its own to fault in at a first call). */
static unsigned g_early_launches; /* atomic: launches counted until an exec exists */
static int g_built_any;           /* atomic: an exec was built in this process */
static uint32_t g_after;          /* MGPU_CACHED_GRAPH_AFTER, at least 1; written once (g_graph_once) */
static unsigned g_first_after;    /* MGPU_CACHED_GRAPH_FIRST_AFTER; written once (g_graph_once) */
static unsigned g_graph_threads;  /* MGPU_CACHED_GRAPH_THREADS (1 to 3); written once (g_graph_once) */

/* Who launched lately (atomic; 0: no launch yet): one bit per thread (a thread's bit: the
 * order of its first launch, modulo 64), set by each thread that launches while its bit is not
 * there. A thread launches alone when the word holds its bit only; its streak (thread-local)
 * counts its launches in a row since it found that, and the graph path opens at GRAPH_STREAK.
 * A thread that finds other bits claims the word (stores its bit alone) and takes the stream
 * path: the others set their bits again at their next launch, so the claimer sees them and stays
 * on the stream path. Threads launching side by side thus write the word only when one claims,
 * and a thread claims at once the first time it finds others after launching alone, then only
 * every CLAIM_EVERY_MAX launches at most (the interval doubles while it finds others each time),
 * so the word's line is not written on every launch. A thread alone only reads it. Threads
 * beyond 64 share bits: two sharing one may both take the graph path (results are the same; the
 * driver serialises them, as it would with g_inflight's check).
 * Every launch reads the word, and each store makes every other launching thread miss on it once:
 * it has a cache line of its own (it shared one with the launch path's read-mostly statics, read
 * at every launch), the others set their bits with one read-modify-write (racing plain stores
 * dropped each other's bits and stored again), and a claim comes at most every 4096 launches of a
 * thread (at 256, 16 threads stored on 5.8% of their launches on the H100, run N16). A thread
 * left alone waits at most that many stream-path launches before its claim opens the graph path. */
#define GRAPH_STREAK 4
#define CLAIM_EVERY_MAX 4096
static struct {
  _Alignas(64) uint64_t w; /* atomic */
  char pad[64 - sizeof(uint64_t)];
} g_launchers_line;
static unsigned g_launcher_count; /* atomic: threads that launched so far (bits handed out) */

typedef struct launcher {
  uint64_t bit;      /* this thread's bit; 0: none yet */
  unsigned streak;   /* launches in a row with the word holding this bit only */
  unsigned every;    /* launches between two claims while others launch (0: claim at once); read
                        only while streak is 0, set at each claim */
  unsigned since;    /* launches since the last claim */
} launcher;
static _Thread_local launcher tl_launcher;

static void launcher_store(uint64_t w) {
  __atomic_store_n(&g_launchers_line.w, w, __ATOMIC_RELAXED);
  MC_STAT_INC(graph_launcher_stores);
}

int mc_graph_launch_enter(void) {
  launcher *t = MC_TLS_ADDR(tl_launcher);
  if (!t->bit)
    t->bit = 1ull << (__atomic_fetch_add(&g_launcher_count, 1, __ATOMIC_RELAXED) % 64);
  uint64_t w = __atomic_load_n(&g_launchers_line.w, __ATOMIC_RELAXED);
  if (w == 0) { /* the process's first launch: the graph path at once */
    launcher_store(t->bit);
    t->streak = GRAPH_STREAK;
    return 1;
  }
  if (w == t->bit || ((w & t->bit) && (unsigned)__builtin_popcountll(w) <= g_graph_threads)) {
    /* alone, or among at most MGPU_CACHED_GRAPH_THREADS launching threads */
    if (t->streak < GRAPH_STREAK) ++t->streak;
    return t->streak >= GRAPH_STREAK;
  }
  /* Others launched since this thread's last claim, or it never launched in their company. A
   * thread that was on the graph path claims at once; one that was not yet claims on its
   * schedule (a claim at every first sight of others would let 3 or more threads with the path
   * open for 2 store on most launches). */
  int was_on = t->streak >= GRAPH_STREAK;
  if (was_on || t->since >= t->every) { /* claim: the word holds this thread's bit only */
    t->every = was_on ? 0 : (t->every ? t->every * 2 : 1);
    if (t->every > CLAIM_EVERY_MAX) t->every = CLAIM_EVERY_MAX;
    t->since = 0;
    launcher_store(t->bit);
  } else {
    t->since++;
    if (!(w & t->bit)) { /* its bit again, for the claimer to see */
      __atomic_fetch_or(&g_launchers_line.w, t->bit, __ATOMIC_RELAXED);
      MC_STAT_INC(graph_launcher_stores);
    }
  }
  t->streak = 0;
  return 0;
}

static pthread_once_t g_graph_once = PTHREAD_ONCE_INIT;
static int g_max_execs;   /* written once under g_graph_once */
int mc_graph_state_ = -1; /* graph_launch.h: -1 until decide() ran, then 0 or 1; atomic */

static void decide(void) {
  const mc_config_t *cfg = mc_config();
  g_max_execs = (int)cfg->graph_execs; /* 1 to MAX_EXECS: config.c clamps it (and says so) */
  g_after = cfg->graph_after > 1 ? (uint32_t)(cfg->graph_after > 1000000 ? 1000000
                                                                          : cfg->graph_after)
                                 : 1;
  g_graph_threads = (unsigned)cfg->graph_threads; /* 1 to 3: config.c clamps it */
  g_first_after = (unsigned)(cfg->graph_first_after > 100000000 ? 100000000
                                                                : cfg->graph_first_after);
  int enabled = cfg->graph && mc_backend() == MC_BACKEND_CUDA && mc_cu.cuGraphCreate &&
              mc_cu.cuGraphDestroy && mc_cu.cuGraphAddKernelNode && mc_cu.cuGraphInstantiate &&
              mc_cu.cuGraphExecDestroy && mc_cu.cuGraphExecKernelNodeSetParams &&
              mc_cu.cuGraphLaunch;
  __atomic_store_n(&mc_graph_state_, enabled, __ATOMIC_RELEASE); /* after the settings above */
}

static int g_graph_decided; /* atomic: decide() ran (mc_once) */

/* Until decided (graph_launch.h's inline test goes on to here): off while no driver is loaded. */
int mc_graph_enabled_slow(void) {
  if (!mc_driver_loaded()) return 0;
  mc_once(&g_graph_once, &g_graph_decided, decide);
  return __atomic_load_n(&mc_graph_state_, __ATOMIC_ACQUIRE);
}

static size_t hash_ptr(const void *p, size_t n) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 31;
  x *= 0x9E3779B97F4A7C15ull;
  x ^= x >> 29;
  return (size_t)(x & (n - 1));
}

/* ---- disabled functions ---- */

static int is_disabled(CUfunction cf) {
  if (__atomic_load_n(&g_graph.disabled_full, __ATOMIC_ACQUIRE)) return 1;
  if (!__atomic_load_n(&g_graph.ndisabled, __ATOMIC_ACQUIRE)) return 0;
  size_t h = hash_ptr(cf, DISABLED_SLOTS);
  for (size_t i = 0; i < DISABLED_SLOTS; ++i) {
    CUfunction v = __atomic_load_n(&g_graph.disabled[(h + i) & (DISABLED_SLOTS - 1)],
                                   __ATOMIC_ACQUIRE);
    if (!v) return 0;
    if (v == cf) return 1;
  }
  return 0;
}

/* First launches. An exec pays for itself only over repeated launches: on the H100 a later
 * function's exec cost 6-9 us to build (up to 49) and saves ~2.2 us per synchronous launch
 * (break-even at 3-4 launches), and the process's first one 174-278 us, the driver's first
 * instantiation (break-even at 75-117 launches; benchmarks/graph_build_probe.c, run N3). So a
 * launch that finds no exec takes the stream path while its function has made fewer than
 * MGPU_CACHED_GRAPH_AFTER launches without one (default 4: the exec is built at the fourth), and
 * while no exec exists in the process and the process has made fewer than
 * MGPU_CACHED_GRAPH_FIRST_AFTER launches (default 100): a program that launches a kernel a few
 * times, or launches little in all, never pays more for the graph path than it gets back. The
 * counts are lock-free (a compare-and-swap into an empty slot of the set, then an atomic count
 * that stops at the threshold, so a function past it costs reads only); when the set is half
 * full, every function counts as past its threshold. Returns 1 when this launch is early. */
__attribute__((noinline, cold)) static int early_launch(CUfunction cf) {
  int early = 0;
  /* the process gate: counted only up to the threshold (no atomic add per launch after it) */
  if (!__atomic_load_n(&g_built_any, __ATOMIC_ACQUIRE) &&
      __atomic_load_n(&g_early_launches, __ATOMIC_RELAXED) < g_first_after &&
      __atomic_add_fetch(&g_early_launches, 1, __ATOMIC_RELAXED) < g_first_after)
    early = 1;
  if (g_after <= 1) return early;
  size_t h = hash_ptr(cf, SEEN_SLOTS);
  for (size_t i = 0; i < SEEN_SLOTS / 2; ++i) {
    size_t at = (h + i) & (SEEN_SLOTS - 1);
    CUfunction *slot = &g_early.seen[at].f;
    /* During the process's first launches a write first (the compare-and-swap below): a fresh
     * page then faults once, not twice (read, then write); after them a read first, so a function
     * past its count costs no locked instruction. */
    CUfunction v = early ? NULL : __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!v) {
      CUfunction empty = NULL;
      if (!__atomic_compare_exchange_n(slot, &empty, cf, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        v = empty; /* another thread took the slot just now */
      else
        v = cf;
    }
    if (v != cf) continue;
    uint32_t *n = &g_early.seen[at].n;
    if (__atomic_load_n(n, __ATOMIC_RELAXED) >= g_after - 1) return early; /* past it */
    return __atomic_add_fetch(n, 1, __ATOMIC_RELAXED) < g_after ? 1 : early;
  }
  return early;
}

static void disable(CUfunction cf) {
  MC_STAT_INC(graph_disabled_functions);
  pthread_mutex_lock(&g_graph.lock);
  size_t h = hash_ptr(cf, DISABLED_SLOTS);
  size_t i = 0;
  for (; i < DISABLED_SLOTS / 2; ++i) { /* at most half full: probes stay short */
    CUfunction *slot = &g_graph.disabled[(h + i) & (DISABLED_SLOTS - 1)];
    CUfunction v = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (v == cf) break;
    if (!v) {
      __atomic_store_n(slot, cf, __ATOMIC_RELEASE);
      __atomic_store_n(&g_graph.ndisabled, g_graph.ndisabled + 1, __ATOMIC_RELEASE);
      break;
    }
  }
  if (i == DISABLED_SLOTS / 2) __atomic_store_n(&g_graph.disabled_full, 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&g_graph.lock);
}

/* ---- stream entries ---- */

static g_stream *stream_entry(CUstream s) {
  size_t h = hash_ptr(s, STREAM_SLOTS);
  for (size_t i = 0; i < STREAM_SLOTS / 2; ++i) {
    g_stream *e = __atomic_load_n(&g_graph.streams[(h + i) & (STREAM_SLOTS - 1)],
                                  __ATOMIC_ACQUIRE);
    if (!e) break;
    if (e->stream == s) return e;
  }
  /* Not there: insert under the lock (re-probing: another thread may have inserted it). */
  g_stream *fresh = aligned_alloc(64, sizeof(g_stream));
  if (!fresh) return NULL;
  memset(fresh, 0, sizeof *fresh);
  fresh->stream = s;
  g_stream *found = NULL;
  pthread_mutex_lock(&g_graph.lock);
  for (size_t i = 0; i < STREAM_SLOTS / 2; ++i) {
    g_stream **slot = &g_graph.streams[(h + i) & (STREAM_SLOTS - 1)];
    g_stream *e = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (e && e->stream == s) {
      found = e;
      break;
    }
    if (!e) {
      __atomic_store_n(slot, fresh, __ATOMIC_RELEASE);
      found = fresh;
      fresh = NULL;
      break;
    }
  }
  pthread_mutex_unlock(&g_graph.lock);
  free(fresh); /* unused (found, or the table is half full: stream path) */
  return found;
}

static int try_busy(g_stream *e) {
  int z = 0;
  return __atomic_compare_exchange_n(&e->busy, &z, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}
static void take_busy(g_stream *e) {
  unsigned spins = 0;
  while (!try_busy(e))
    if (++spins > 64) sched_yield();
}
static void end_busy(g_stream *e) { __atomic_store_n(&e->busy, 0, __ATOMIC_RELEASE); }

/* ---- execs ---- */

static void graph_exec_free(g_exec *x) {
  if (!x) return;
  if (x->exec) mc_cu.cuGraphExecDestroy(x->exec);
  if (x->graph) mc_cu.cuGraphDestroy(x->graph);
  free(x->off);
  free(x->size);
  free(x->values);
  free(x->prev_values);
  free(x);
}

void mc_graph_node_params(CUDA_KERNEL_NODE_PARAMS *p, CUfunction cf, const mc_graph_dims *d,
                          void **params) {
  memset(p, 0, sizeof *p);
  p->func = cf;
  p->gridDimX = d->grid[0];
  p->gridDimY = d->grid[1];
  p->gridDimZ = d->grid[2];
  p->blockDimX = d->block[0];
  p->blockDimY = d->block[1];
  p->blockDimZ = d->block[2];
  p->sharedMemBytes = d->smem;
  p->kernelParams = params;
}

/* The node now holds this launch; `update`: it held another one before, kept as the previous. */
static void remember_values(g_exec *x, const mc_graph_dims *d, void **params, int update) {
  if (update && x->sizes_known) {
    x->prev_dims = x->dims;
    memcpy(x->prev_values, x->values, x->bytes);
    x->has_prev = 1;
  }
  x->dims = *d;
  if (x->sizes_known)
    for (size_t i = 0; i < x->nparams; ++i) memcpy(x->values + x->off[i], params[i], x->size[i]);
}

/* Are `dims` and `values` (laid out as x's) exactly this launch? */
static int holds(const g_exec *x, const mc_graph_dims *dims, const unsigned char *values,
                 const mc_graph_dims *d, void **params) {
  if (!x->sizes_known || (x->nparams && !params)) return 0;
  if (!mc_graph_dims_equal(dims, d)) return 0;
  for (size_t i = 0; i < x->nparams; ++i)
    if (!mc_bytes_equal(values + x->off[i], params[i], x->size[i])) return 0;
  return 1;
}

/* h with the n bytes at p mixed in, 8 at a time (arguments are mostly 8 or 4 bytes). */
static uint64_t hash_bytes(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (; n; b += n < 8 ? n : 8, n -= n < 8 ? n : 8) {
    uint64_t v = 0;
    memcpy(&v, b, n < 8 ? n : 8);
    h = (h ^ v) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
  }
  return h;
}

/* A hash of `key` and this launch's dimensions and argument values, laid out as x's (sizes
 * known). */
static uint64_t launch_hash(const g_exec *x, const void *key, const mc_graph_dims *d,
                            void **params) {
  uint64_t h = hash_bytes((uint64_t)(uintptr_t)key, d, sizeof *d);
  for (size_t i = 0; i < x->nparams; ++i) h = hash_bytes(h, params[i], x->size[i]);
  return h;
}

/* The functions with an exec on `e` (busy held). */
static int functions_on(const g_stream *e) {
  int n = 0;
  for (int i = 0; i < e->n; ++i) {
    int first = 1;
    for (int j = 0; j < i && first; ++j) first = e->execs[j]->key != e->execs[i]->key;
    n += first;
  }
  return n ? n : 1;
}

/* Would this launch update an exec with values updated in before, within the stream's last
 * RECENT_MISSES updates (busy held)? Records it as one. */
static int repeated_update(g_stream *e, const g_exec *x, const void *key, const mc_graph_dims *d,
                           void **params) {
  if (!x->sizes_known || (x->nparams && !params)) return 0;
  uint64_t h = launch_hash(x, key, d, params);
  unsigned n = e->nrecent < RECENT_MISSES ? e->nrecent : RECENT_MISSES;
  int seen = 0;
  for (unsigned i = 0; i < n && !seen; ++i) seen = e->recent[i] == h;
  e->recent[e->nrecent++ % RECENT_MISSES] = h;
  return seen;
}

/* Does the exec's node hold exactly this launch (dimensions and argument values)? */
static int same_launch(const g_exec *x, const mc_graph_dims *d, void **params) {
  return holds(x, &x->dims, x->values, d, params);
}

/* Did it hold this launch before its last update (the launches alternate between two sets)? */
static int alternates(const g_exec *x, const mc_graph_dims *d, void **params) {
  return x->has_prev && holds(x, &x->prev_dims, x->prev_values, d, params);
}

int mc_graph_param_sizes(CUfunction cf, size_t **sizes, size_t *bytes) {
  *sizes = NULL;
  *bytes = 0;
  if (!mc_cu.cuFuncGetParamInfo) return -1;
  size_t cap = 0, n = 0, total = 0;
  size_t *sz = NULL;
  for (;;) {
    size_t off = 0, size = 0;
    CUresult r = mc_cu.cuFuncGetParamInfo(cf, n, &off, &size);
    if (r == MC_CUDA_ERROR_INVALID_VALUE) break; /* past the last argument */
    if (r != 0 || n >= MC_GRAPH_MAX_PARAMS) {    /* no information */
      free(sz);
      return -1;
    }
    if (n == cap) {
      cap = cap ? 2 * cap : 8;
      size_t *grown = realloc(sz, cap * sizeof *grown);
      if (!grown) {
        free(sz);
        return -1;
      }
      sz = grown;
    }
    sz[n++] = size;
    total += size;
  }
  if (!sz && !(sz = malloc(sizeof *sz))) return -1; /* no arguments: still an owned array */
  *sizes = sz;
  *bytes = total;
  return (int)n;
}

/* The exec's argument sizes and its own packing of their values. Unknown: every launch updates. */
static void param_info(g_exec *x) {
  size_t total = 0;
  int n = mc_graph_param_sizes(x->cf, &x->size, &total);
  if (n < 0 || !(x->off = malloc((n ? (size_t)n : 1) * sizeof *x->off))) return;
  for (size_t i = 0, o = 0; i < (size_t)n; o += x->size[i++])
    x->off[i] = o; /* offsets in `values`, not the driver's */
  x->values = malloc(total ? total : 1);
  x->prev_values = malloc(total ? total : 1);
  if (!x->values || !x->prev_values) return;
  x->bytes = total;
  x->nparams = (size_t)n;
  x->sizes_known = 1;
}

/* A new exec for `cf` whose node holds this launch; NULL on any failure (*bad_input: the launch
 * lacks the kernel's arguments, not the function's fault). No lock held. */
static g_exec *exec_build(const void *key, CUfunction cf, const mc_graph_dims *d, void **params,
                          int *bad_input) {
  *bad_input = 0;
  g_exec *x = calloc(1, sizeof *x);
  if (!x) return NULL;
  x->key = key;
  x->cf = cf;
  param_info(x);
  if (x->sizes_known && x->nparams && !params) {
    *bad_input = 1;
    graph_exec_free(x);
    return NULL;
  }
  CUDA_KERNEL_NODE_PARAMS p;
  mc_graph_node_params(&p, cf, d, params);
  if (mc_cu.cuGraphCreate(&x->graph, 0) != 0) {
    x->graph = NULL;
    graph_exec_free(x);
    return NULL;
  }
  if (mc_cu.cuGraphAddKernelNode(&x->node, x->graph, NULL, 0, &p) != 0 ||
      mc_cu.cuGraphInstantiate(&x->exec, x->graph, 0) != 0) {
    x->exec = NULL;
    graph_exec_free(x);
    return NULL;
  }
  remember_values(x, d, params, 0);
  __atomic_store_n(&g_built_any, 1, __ATOMIC_RELEASE);
  MC_STAT_INC(graph_instantiates);
  return x;
}

static int find_exec(const g_stream *e, const void *key, CUfunction cf) {
  for (int i = 0; i < e->n; ++i)
    if (e->execs[i]->key == key && e->execs[i]->cf == cf) return i;
  return -1;
}

/* The exec of (key, cf) to launch this through: one whose node holds it (*same = 1), else the
 * function's least recently launched one (*same = 0); -1 if it has none. *count: its execs. */
static int pick_exec(const g_stream *e, const void *key, CUfunction cf, const mc_graph_dims *d,
                     void **params, int *same, int *count) {
  int pick = -1;
  *same = 0;
  *count = 0;
  for (int i = 0; i < e->n; ++i) {
    const g_exec *x = e->execs[i];
    if (x->key != key || x->cf != cf) continue;
    ++*count;
    if (!*same && same_launch(x, d, params)) {
      pick = i;
      *same = 1;
    } else if (!*same && (pick < 0 || x->last_use < e->execs[pick]->last_use)) {
      pick = i;
    }
  }
  return pick;
}

/* Insert `x` (busy held); returns the evicted exec to free outside, or NULL. */
static g_exec *insert_exec(g_stream *e, g_exec *x) {
  g_exec *victim = NULL;
  if (e->n >= g_max_execs) {
    e->evicted_at = e->tick ? e->tick : 1;
    int lru = 0;
    for (int i = 1; i < e->n; ++i)
      if (e->execs[i]->last_use < e->execs[lru]->last_use) lru = i;
    victim = e->execs[lru];
    e->execs[lru] = e->execs[--e->n];
    MC_STAT_INC(graph_evictions);
  }
  e->execs[e->n++] = x;
  return victim;
}

/* May a new exec be added to `e` (busy held): room, or an eviction allowed now (see above)? */
static int room(const g_stream *e) {
  return e->n < g_max_execs || !e->evicted_at || e->tick - e->evicted_at >= EVICT_EVERY;
}

static void remove_exec(g_stream *e, int i) { e->execs[i] = e->execs[--e->n]; }

static void graph_prepare(const void *key, CUfunction cf, CUstream stream, const mc_graph_dims *d,
                          void **params) {
  g_stream *e = stream_entry(stream);
  if (!e) return;
  take_busy(e);
  int skip = find_exec(e, key, cf) >= 0 || !room(e);
  end_busy(e);
  if (skip) return;
  int bad_input = 0;
  g_exec *x = exec_build(key, cf, d, params, &bad_input);
  if (!x) {
    if (!bad_input) disable(cf);
    return;
  }
  g_exec *victim = x;
  take_busy(e);
  if (find_exec(e, key, cf) < 0) victim = insert_exec(e, x);
  end_busy(e);
  graph_exec_free(victim);
}

static int graph_launch(const void *key, CUfunction cf, CUstream stream, const mc_graph_dims *d,
                        void **params, int build, int *missing, mc_ctx_scope *scope) {
  g_stream *e = stream_entry(stream);
  if (!e || !try_busy(e)) return 0;
  int same = 0, count = 0;
  int i = pick_exec(e, key, cf, d, params, &same, &count);
  g_exec *victim = NULL;
  int fresh = 0;
  if (i < 0 && !build) {
    end_busy(e);
    if (missing) *missing = 1;
    return 0;
  }
  if (i < 0 && early_launch(cf)) { /* see "First launches" */
    end_busy(e);
    MC_STAT_INC(graph_first_launches);
    return 0;
  }
  if (i < 0 && !room(e)) { /* full, and an eviction now would come too soon after the last */
    ++e->tick;
    end_busy(e);
    MC_STAT_INC(graph_full);
    return 0;
  }
  /* none yet, or another argument set (see "Argument sets") */
  int another = 0;
  if (i >= 0 && build && !same && e->n < g_max_execs) {
    if (count < ARG_SETS && alternates(e->execs[i], d, params))
      another = 1;
    else if (count < g_max_execs / functions_on(e))
      another = repeated_update(e, e->execs[i], key, d, params);
  }
  if (i < 0 || another) {
    end_busy(e);
    int bad_input = 0;
    if (scope && MC_FAILED(mc_ctx_settle(scope))) return 0; /* a bare launch: pushed now */
    g_exec *x = exec_build(key, cf, d, params, &bad_input); /* no lock held across it */
    if (!x) {
      if (!bad_input) disable(cf);
      return 0;
    }
    take_busy(e);
    int n_before = count;
    i = pick_exec(e, key, cf, d, params, &same, &count);
    if (same || (i >= 0 && count > n_before)) { /* another thread made one meanwhile: use it */
      victim = x;
    } else {
      victim = insert_exec(e, x);
      i = e->n - 1;
      fresh = 1;
    }
  }
  g_exec *x = e->execs[i];
  if (x->nparams && !params) { /* bad input: the driver reports it on the stream path */
    end_busy(e);
    graph_exec_free(victim);
    return 0;
  }
  int counted = g_graph_threads == 1; /* several threads allowed: the gate alone limits them */
  if (counted && __atomic_fetch_add(&g_inflight, 1, __ATOMIC_ACQ_REL) != 0) { /* see g_inflight */
    __atomic_fetch_sub(&g_inflight, 1, __ATOMIC_RELEASE);
    end_busy(e);
    graph_exec_free(victim);
    MC_STAT_INC(graph_contended);
    return 0;
  }
  mc_stats_block *sb = mc_stats_mine(); /* one thread-local look-up for the counts below */
  if (!fresh) {
    if (same) {
      MC_STAT_INC_IN(sb, graph_update_skips);
    } else {
      CUDA_KERNEL_NODE_PARAMS p;
      mc_graph_node_params(&p, cf, d, params);
      if (scope && MC_FAILED(mc_ctx_settle(scope))) goto fail_inflight; /* bare: pushed now */
      if (mc_cu.cuGraphExecKernelNodeSetParams(x->exec, x->node, &p) != 0) goto fail_inflight;
      remember_values(x, d, params, 1);
      MC_STAT_INC_IN(sb, graph_updates);
    }
  }
  CUresult lr = mc_cu.cuGraphLaunch(x->exec, stream);
  if (scope && mc_ctx_bare_retry(scope, lr)) lr = mc_cu.cuGraphLaunch(x->exec, stream);
  if (lr != 0) goto fail_inflight;
  if (counted) __atomic_fetch_sub(&g_inflight, 1, __ATOMIC_RELEASE);
  x->last_use = ++e->tick;
  end_busy(e);
  graph_exec_free(victim);
  MC_STAT_INC_IN(sb, graph_launches);
  return 1;
fail_inflight: /* nothing was enqueued: drop the exec, send the function down the stream path */
  if (counted) __atomic_fetch_sub(&g_inflight, 1, __ATOMIC_RELEASE);
  if (scope) (void)mc_ctx_settle(scope); /* the exec is destroyed in its context */
  remove_exec(e, i);
  end_busy(e);
  graph_exec_free(x);
  graph_exec_free(victim);
  disable(cf);
  return 0;
}

/* ---- capture safety (issue 19 item 2) ----
 * Every graph call here is the library's own (the stock wrapper launches with cuLaunchKernel):
 * cuGraphCreate / AddKernelNode / Instantiate / ExecDestroy / ExecKernelNodeSetParams and even
 * cuGraphLaunch on an unrelated stream invalidate another thread's global-mode stream capture
 * (H100, driver_probe.cu), and all are harmless in relaxed mode. So each launch or preparation
 * runs in relaxed mode, one mc_relaxed_enter/leave for all its calls (~62 ns the pair on the H100);
 * inside another bracket (chain.c's submissions) it costs nothing more (capture.h: the thread's
 * bracket depth). */

void mc_graph_prepare(const void *key, CUfunction cf, CUstream stream, const mc_graph_dims *d,
                      void **params) {
  if (!stream || !mc_graph_enabled() || is_disabled(cf)) return;
  mc_relaxed r;
  mc_relaxed_enter(&r);
  graph_prepare(key, cf, stream, d, params);
  mc_relaxed_leave(&r);
}

int mc_graph_launch_early(CUfunction cf) {
  if (__atomic_load_n(&g_built_any, __ATOMIC_ACQUIRE) || is_disabled(cf)) return 0;
  if (!early_launch(cf)) return 0;
  MC_STAT_INC(graph_first_launches);
  return 1;
}

int mc_graph_launch(const void *key, CUfunction cf, CUstream stream, const mc_graph_dims *d,
                    void **params, int build, int *missing, mc_ctx_scope *scope) {
  if (missing) *missing = 0;
  if (!stream || !mc_graph_enabled() || is_disabled(cf)) return 0;
  mc_relaxed r;
  mc_relaxed_enter(&r);
  int done = graph_launch(key, cf, stream, d, params, build, missing, scope);
  mc_relaxed_leave(&r);
  return done;
}

/* ---- faults (issue 19 item 5): a primary context was reset (context.h) ----
 * Every stream entry is forgotten (entries have no device: all of them go; other devices' execs
 * are made again once): never launched or destroyed again (their execs belong to the dead
 * context or are merely leaked), and a new driver stream that takes an old one's value starts
 * with no exec. Entries are never freed (a launch may hold one now). Functions sent down the
 * stream path stay there. */
void mc_graph_forget_device(int device) {
  (void)device;
  pthread_mutex_lock(&g_graph.lock);
  for (size_t i = 0; i < STREAM_SLOTS; ++i) __atomic_store_n(&g_graph.streams[i], NULL, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&g_graph.lock);
}

/* ---- fork ---- */

void mc_graph_fork_prepare(void) { pthread_mutex_lock(&g_graph.lock); }
void mc_graph_fork_parent(void) { pthread_mutex_unlock(&g_graph.lock); }
void mc_graph_fork_child(void) {
  /* The parent's execs and driver streams are never used in the child (their memory leaks): a
   * child's new driver stream may take a parent stream's value. */
  memset(g_graph.streams, 0, sizeof g_graph.streams);
  memset(g_graph.disabled, 0, sizeof g_graph.disabled);
  g_graph.ndisabled = 0;
  g_graph.disabled_full = 0;
  g_inflight = 0; /* threads of the parent inside a launch do not exist in the child */
  g_launchers_line.w = 0;
  /* the child's driver instantiates afresh: its first exec waits for its own 100 launches, and
   * a function of the child whose value a parent's had starts its count again */
  g_built_any = 0;
  g_early_launches = 0;
  memset(&g_early, 0, sizeof g_early);
  pthread_mutex_init(&g_graph.lock, NULL);
}
