/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* chain.c - opt-in chain replay (see chain.h).
 *
 * State: one pending segment (launches deferred on one stream handle, their dimensions and
 * argument values copied into `args`), the signatures of the last segments submitted, the
 * length of the last chain (head start, below), a small cache of chain execs (per driver stream
 * and sequence of functions, least recently used evicted), and the argument sizes of each
 * function seen (cuFuncGetParamInfo; keyed by the library's function handle and the CUfunction,
 * never reused for another kernel).
 *
 * Locking rule. g_chain.lock (an mc_lock, support/lock.h: it is taken at every deferred launch)
 * guards everything here. Under it the only driver calls are the submission of a segment
 * (context push/pop, cuGraphExecKernelNodeSetParams, cuGraphLaunch, cuLaunchKernel, through
 * graph_launch.c, which makes no exec under it) and cuFuncGetParamInfo: non-blocking. A chain
 * graph is built and instantiated with no lock held, after its segment was submitted one launch
 * at a time; so is a one-node exec a submission found missing (the launch went through
 * cuLaunchKernel); evicted execs are destroyed after the lock is released. Order:
 * g_chain.lock, then graph_launch.c's locks and the pool's record uses (never the other way
 * round).
 */
#include "launch/chain.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "support/config.h"
#include "support/lock.h"
#include "platform/backend.h"
#include "platform/capture.h"
#include "platform/context.h"
#include "platform/driver.h"
#include "modules/module_cache.h"
#include "support/stats.h"

#define MAX_SEG 128          /* launches per pending segment (more: submitted, a new one starts) */
#define ARG_BYTES 16384      /* argument bytes per pending segment */
#define MAX_ARGS 256         /* arguments per kernel the chain copies */
#define CACHE 8              /* chain execs kept (>= RECENT: a cycle of segments that repeats
                                within RECENT submissions fits, so its execs are never evicted
                                and made again) */
#define PINFO_SLOTS 1024     /* functions whose argument sizes are known */
#define LOOKBACK 16          /* launches of the pending segment mc_chain_append searches */
#define HEAD 16              /* a long chain's first launches submitted early (below) */
#define RECENT 8             /* segments remembered: one seen again gets a chain exec */

typedef struct pinfo {
  const void *key;   /* function handle; NULL = free slot */
  CUfunction cf;
  int n;             /* arguments; -1 unknown */
  size_t bytes;      /* total */
  size_t *size;      /* [n], owned */
} pinfo;

typedef struct seg_launch {
  const void *key;
  CUfunction cf;
  mc_graph_dims d;
  const pinfo *pi;
  size_t argoff; /* in args */
} seg_launch;

typedef struct chain_exec {
  CUstream stream;       /* driver stream it is launched on */
  uint64_t sig;          /* hash of the function sequence */
  int n;
  const void **keys;     /* [n] */
  CUfunction *cfs;       /* [n] */
  CUgraph graph;
  CUgraphExec exec;
  CUgraphNode *nodes;    /* [n] */
  mc_graph_dims *dims;   /* [n] what each node holds */
  unsigned char *values; /* argument values the nodes hold, laid out as the segment's args */
  size_t bytes;
  uint64_t last_use;
} chain_exec;

typedef struct prep_req { /* a one-node exec to make after a submission (no lock held) */
  const void *key;
  CUfunction cf;
  CUstream stream;
  int device;
  mc_graph_dims d;
  void *params[MAX_ARGS];
  unsigned char args[]; /* the launch's argument values */
} prep_req;

typedef struct build_req { /* a submitted segment to make a chain exec of (no lock held) */
  CUstream stream;
  int device;
  uint64_t sig;
  int n;
  seg_launch l[MAX_SEG];
  unsigned char args[ARG_BYTES];
  size_t bytes;
} build_req;

static struct {
  mc_lock lock;              /* everything below (rule above); support/lock.h */
  int pending;               /* atomic mirror of n > 0, for the fast path */
  uint64_t verify_owed;      /* atomic: bit d set when a module load on device d skipped its
                                context check while launches were pending (mc_chain_load_verify) */
  int has_unreported;        /* atomic mirror of "unreported holds a failure" (beside pending:
                                every launch reads both, and a first call faults one page) */
  mc_status unreported;      /* a failure of a submission before a module unload (no caller to
                                report it): the next flush returns it */
  CUstream handle;           /* library handle of the pending segment; atomic (read unlocked) */
  mc_stream_use use;         /* held while launches are pending */
  int n;
  seg_launch l[MAX_SEG];
  unsigned char args[ARG_BYTES];
  size_t argused;
  struct {                   /* the last RECENT segments submitted (ring; n = 0: empty) */
    uint64_t sig;
    CUstream stream;
    int n;
  } recent[RECENT];
  int recent_next;
  /* Head start (issue 21 item 2). A chain's launches all wait for its flush, so the host's
   * recording of them adds to the GPU's work instead of overlapping it. When the last chain on
   * this handle was long (at least 2 * HEAD launches between two flushes), the first HEAD
   * launches of the next one are submitted as soon as they are pending: the GPU runs them while
   * the host records the rest (run N119: a 100-launch chain with the LLVM <= 20 heap shape's
   * recording, 1.15x one graph as one part, 1.04x with its first 16 launches a part of their
   * own; below 2 * HEAD a second part costs more than it hides). After the head, each segment
   * is submitted once it holds twice the launches the chain submitted before it (16, 32, 96,
   * then MAX_SEG): the GPU gets more work before the host's recording of the next part could
   * outrun it (run N120: on a host recording at 0.25 us a launch, a head of 16 runs out before
   * the other 84 launches of a 100-launch chain are recorded). Launching earlier is what the
   * stock wrapper does with every launch. */
  int chain_len;             /* launches submitted since the last flush that ended a chain */
  int headed;                /* 1: this chain's head was submitted (its later parts follow) */
  int split_at;              /* the pending segment is submitted when it holds this many
                                launches (0: at the flush; set when the segment begins) */
  CUstream last_chain;       /* handle of the last chain ended, and its length */
  int last_chain_len;
  /* Kept stream (issue 21 item 2). A chain that its own stream's synchronisation ended
   * (mc_chain_flush_sync) keeps that handle's use, and a memo of its kernels (function,
   * CUfunction, argument sizes, dynamic shared memory of its first LOOKBACK distinct kernels):
   * the next chain's first launch on the handle, of a kernel of the memo, begins a segment with
   * that use as mc_chain_append appends (append_kept: no stream use or binding, context, capture
   * check or function resolution; the stream stays bound across the synchronisation), and a
   * later launch of that chain of a kernel not pending yet but in the memo is appended as well
   * (as safe as one pending: the chain's stream has seen no observation point since). Only the
   * module look-ups and unloads, launches on the kept handle and its own synchronisation leave it
   * kept; every other flush lets it go (drop_kept_locked). So nothing can have begun a capture
   * on it or pinned it meanwhile: the program has no driver handle of the library's stream, and
   * a capture reaches a stream only through an event wait on it (an mgpu* call, which flushes).
   * kept implies n == 0. */
  int kept;                  /* atomic: 1 while kept_use is held */
  CUstream kept_handle;      /* atomic (read unlocked): the kept handle */
  mc_stream_use kept_use;    /* the handle's use, held while kept */
  struct {                   /* the kept chain's kernels (its first LOOKBACK distinct ones) */
    const void *key;
    CUfunction cf;
    const pinfo *pi;
    unsigned smem;
  } memo[LOOKBACK];
  int memo_n;
  CUstream memo_handle;      /* the handle the memo serves: the kept one, then the segment
                                begun on it, until that chain ends (NULL: none) */
  chain_exec *cache[CACHE];
  uint64_t tick;
  pinfo pinfos[PINFO_SLOTS];
  int exit_registered;
} g_chain = {.lock = MC_LOCK_INIT};

int mc_chain_used; /* chain.h */

/* ---- argument sizes ---- */

/* The argument sizes of cf, asked of the driver (cuFuncGetParamInfo) at its first launch, in the
 * launch's context: `scope` is settled first (a bare launch's context pushed, context.h). NULL
 * when the table is too full or the push failed: not deferred. */
static const pinfo *param_info_locked(const void *key, CUfunction cf, mc_ctx_scope *scope) {
  uint64_t h = ((uint64_t)(uintptr_t)key ^ ((uint64_t)(uintptr_t)cf >> 3)) * 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < PINFO_SLOTS; ++i) {
    pinfo *p = &g_chain.pinfos[(h + i) & (PINFO_SLOTS - 1)];
    if (p->key == key && p->cf == cf) return p;
    if (p->key) continue;
    if (i > PINFO_SLOTS / 2) return NULL; /* too full: not deferred */
    if (MC_FAILED(mc_ctx_settle(scope))) return NULL;
    p->key = key;
    p->cf = cf;
    p->n = -1;
    size_t *sizes = NULL, total = 0;
    int n = mc_graph_param_sizes(cf, &sizes, &total);
    if (n < 0 || n > MAX_ARGS) { /* unknown, or more than a launch's params array holds */
      free(sizes);
      return p;
    }
    p->size = sizes;
    p->bytes = total;
    p->n = n;
    return p;
  }
  return NULL;
}

/* ---- signatures, execs ---- */

static uint64_t seg_sig(const seg_launch *l, int n) {
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < n; ++i) {
    h = (h ^ (uint64_t)(uintptr_t)l[i].key) * 1099511628211ull;
    h = (h ^ (uint64_t)(uintptr_t)l[i].cf) * 1099511628211ull;
  }
  return h;
}

static void chain_exec_free(chain_exec *x) {
  if (!x) return;
  if (x->exec) mc_cu.cuGraphExecDestroy(x->exec);
  if (x->graph) mc_cu.cuGraphDestroy(x->graph);
  free(x->keys);
  free(x->cfs);
  free(x->nodes);
  free(x->dims);
  free(x->values);
  free(x);
}

static int find_exec_locked(CUstream stream, uint64_t sig, const seg_launch *l, int n) {
  for (int c = 0; c < CACHE; ++c) {
    chain_exec *x = g_chain.cache[c];
    if (!x || x->stream != stream || x->sig != sig || x->n != n) continue;
    int same = 1;
    for (int i = 0; i < n && same; ++i) same = x->keys[i] == l[i].key && x->cfs[i] == l[i].cf;
    if (same) return c;
  }
  return -1;
}

/* The kernelParams array of launch i of a segment whose values lie in `args`. */
static void params_of(const seg_launch *s, unsigned char *args, void **out) {
  size_t off = s->argoff;
  for (int a = 0; a < s->pi->n; ++a) {
    out[a] = args + off;
    off += s->pi->size[a];
  }
}

static void node_params(CUDA_KERNEL_NODE_PARAMS *p, const seg_launch *s, void **params) {
  mc_graph_node_params(p, s->cf, &s->d, params);
}

/* Replay the pending segment through exec x: update changed nodes, one cuGraphLaunch. 0 or -1
 * (nothing launched: the caller drops x and submits launch by launch). */
static int replay_locked(chain_exec *x, mc_ctx_scope *scope) {
  void *params[MAX_ARGS];
  for (int i = 0; i < x->n; ++i) {
    const seg_launch *s = &g_chain.l[i];
    size_t nb = s->pi->bytes;
    if (mc_graph_dims_equal(&x->dims[i], &s->d) &&
        mc_bytes_equal(x->values + s->argoff, g_chain.args + s->argoff, nb))
      continue;
    if (MC_FAILED(mc_ctx_settle(scope))) return -1; /* a bare submission: pushed now */
    params_of(s, g_chain.args, params);
    CUDA_KERNEL_NODE_PARAMS p;
    node_params(&p, s, params);
    if (mc_cu.cuGraphExecKernelNodeSetParams(x->exec, x->nodes[i], &p) != 0) return -1;
    x->dims[i] = s->d;
    memcpy(x->values + s->argoff, g_chain.args + s->argoff, nb);
    MC_STAT_INC(chain_node_updates);
  }
  CUresult r = mc_cu.cuGraphLaunch(x->exec, g_chain.use.stream);
  if (mc_ctx_bare_retry(scope, r)) r = mc_cu.cuGraphLaunch(x->exec, g_chain.use.stream);
  if (r != 0) return -1;
  x->last_use = ++g_chain.tick;
  MC_STAT_INC(chain_replays);
  return 0;
}

/* Whether a segment (sig, n on stream) is among the last RECENT submitted; notes it if not. */
static int seen_recently_locked(uint64_t sig, int n, CUstream stream) {
  for (int i = 0; i < RECENT; ++i)
    if (g_chain.recent[i].n == n && g_chain.recent[i].sig == sig &&
        g_chain.recent[i].stream == stream)
      return 1;
  int i = g_chain.recent_next;
  g_chain.recent[i].sig = sig;
  g_chain.recent[i].n = n;
  g_chain.recent[i].stream = stream;
  g_chain.recent_next = (i + 1) % RECENT;
  return 0;
}

/* Submit the pending segment (lock held); a segment submitted before among the last RECENT
 * yields a build request, a launch whose one-node exec does not exist yet a prep request (both
 * made after the unlock). `continues`: the chain goes on after it (a head, a full segment), so
 * the segment does not end the chain. */
static void drop_kept_locked(CUstream handle);
static void memo_locked(int n);

static mc_status submit_locked(build_req **req, prep_req **prep, chain_exec **victim,
                               int continues, int keep) {
  mc_status st = MC_OK;
  if (!g_chain.n) return st;
  CUstream stream = g_chain.use.stream;
  int n = g_chain.n;
  uint64_t sig = seg_sig(g_chain.l, n);
  /* The segment's stream is one of the library's driver streams (only those defer): a replay's
   * cuGraphLaunch goes bare (context.h) where bare launches are on; every other driver call here
   * settles the push first. */
  mc_ctx_scope scope;
  st = mc_backend() == MC_BACKEND_CUDA && mc_ctx_bare_enabled()
           ? mc_ctx_enter_bare(g_chain.use.device, &scope)
           : mc_ctx_enter(g_chain.use.device, &scope);
  /* the library's own graph calls (and its deferred launches): relaxed mode (capture.h) */
  mc_relaxed relaxed;
  mc_relaxed_enter(&relaxed);
  if (!MC_FAILED(st)) {
    int c = n >= 2 ? find_exec_locked(stream, sig, g_chain.l, n) : -1;
    int seen = c < 0 && n >= 2 && seen_recently_locked(sig, n, stream);
    if (c >= 0 && replay_locked(g_chain.cache[c], &scope) != 0) {
      *victim = g_chain.cache[c]; /* failed: dropped, submitted launch by launch */
      g_chain.cache[c] = NULL;
      c = -1;
    }
    if (c < 0) st = mc_ctx_settle(&scope); /* launch by launch: a bare scope pushed now */
    if (c < 0 && !MC_FAILED(st)) {
      void *params[MAX_ARGS];
      for (int i = 0; i < n; ++i) {
        seg_launch *s = &g_chain.l[i];
        params_of(s, g_chain.args, params);
        int missing = 0;
        if (mc_graph_launch(s->key, s->cf, stream, &s->d, params, 0, &missing, NULL)) continue;
        if (missing && !*prep && (*prep = malloc(sizeof **prep + s->pi->bytes)) != NULL) {
          prep_req *q = *prep;
          q->key = s->key;
          q->cf = s->cf;
          q->stream = stream;
          q->device = g_chain.use.device;
          q->d = s->d;
          memcpy(q->args, g_chain.args + s->argoff, s->pi->bytes);
          seg_launch copy = *s;
          copy.argoff = 0;
          params_of(&copy, q->args, q->params);
        }
        CUresult r = mc_cu.cuLaunchKernel(s->cf, s->d.grid[0], s->d.grid[1], s->d.grid[2],
                                          s->d.block[0], s->d.block[1], s->d.block[2], s->d.smem,
                                          stream, params, NULL);
        if (r != 0 && !MC_FAILED(st)) st = MC_FAIL("cuLaunchKernel", r);
      }
      if (n >= 2 && !MC_FAILED(st) && seen && (*req = malloc(sizeof **req)) != NULL) {
        build_req *b = *req;
        b->stream = stream;
        b->device = g_chain.use.device;
        b->sig = sig;
        b->n = n;
        memcpy(b->l, g_chain.l, (size_t)n * sizeof *b->l);
        memcpy(b->args, g_chain.args, g_chain.argused);
        b->bytes = g_chain.argused;
      }
    }
    mc_ctx_leave(&scope);
  }
  mc_relaxed_leave(&relaxed);
  MC_STAT_INC(chain_flushes);
  g_chain.chain_len += n;
  if (!continues) { /* the chain ends here */
    g_chain.last_chain = g_chain.handle;
    g_chain.last_chain_len = g_chain.chain_len;
    g_chain.chain_len = 0;
    g_chain.headed = 0;
  }
  /* nothing is kept here: a segment begins only after the kept stream was let go or taken */
  if (keep && !continues && !MC_FAILED(st) && g_chain.use.rec) { /* the stream stays kept */
    g_chain.kept_use = g_chain.use;
    memo_locked(n);
    g_chain.memo_handle = g_chain.handle;
    __atomic_store_n(&g_chain.kept_handle, g_chain.handle, __ATOMIC_RELEASE);
    __atomic_store_n(&g_chain.kept, 1, __ATOMIC_RELEASE);
  } else {
    mc_stream_use_end(&g_chain.use);
    if (!continues) g_chain.memo_handle = NULL; /* the chain the memo served ended */
  }
  g_chain.use.rec = NULL;
  g_chain.n = 0;
  g_chain.argused = 0;
  __atomic_store_n(&g_chain.handle, NULL, __ATOMIC_RELEASE);
  __atomic_store_n(&g_chain.pending, 0, __ATOMIC_RELEASE);
  return st;
}

/* Let go of the kept stream, if any, and of its memo unless a segment on the same handle begins
 * (`handle`: the full path's launch on it, which held its own use; NULL otherwise). Lock held. */
static void drop_kept_locked(CUstream handle) {
  if (!g_chain.kept) return;
  CUstream kept = g_chain.kept_handle;
  __atomic_store_n(&g_chain.kept, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&g_chain.kept_handle, NULL, __ATOMIC_RELEASE);
  mc_stream_use_end(&g_chain.kept_use);
  g_chain.kept_use.rec = NULL;
  if (handle && kept == handle) return; /* the memo serves the segment now */
  g_chain.memo_n = 0;
  g_chain.memo_handle = NULL;
}

/* The memo of a chain ending on its kept stream: its first LOOKBACK distinct kernels (with their
 * dynamic shared memory), from the segment's n launches in l[] (lock held). */
static void memo_locked(int n) {
  int m = 0;
  for (int i = 0; i < n && m < LOOKBACK; ++i) {
    const seg_launch *p = &g_chain.l[i];
    int seen = 0;
    for (int j = 0; j < m && !seen; ++j)
      seen = g_chain.memo[j].key == p->key && g_chain.memo[j].smem == p->d.smem;
    if (seen) continue;
    g_chain.memo[m].key = p->key;
    g_chain.memo[m].cf = p->cf;
    g_chain.memo[m].pi = p->pi;
    g_chain.memo[m].smem = p->d.smem;
    ++m;
  }
  g_chain.memo_n = m;
}

/* The memo's entry for a launch of `key` with `smem` dynamic shared memory on `handle`, or -1
 * (lock held). */
static int memo_find_locked(CUstream handle, const void *key, unsigned smem) {
  if (g_chain.memo_handle != handle) return -1;
  for (int j = 0; j < g_chain.memo_n; ++j)
    if (g_chain.memo[j].key == key && g_chain.memo[j].smem == smem) return j;
  return -1;
}

/* Make the chain exec of a submitted segment (no lock held) and cache it. */
static void build(build_req *b) {
  chain_exec *x = calloc(1, sizeof *x);
  mc_ctx_scope scope;
  if (!x || MC_FAILED(mc_ctx_enter(b->device, &scope))) {
    free(x);
    free(b);
    return;
  }
  int ok = 0;
  x->stream = b->stream;
  x->sig = b->sig;
  x->n = b->n;
  x->keys = malloc((size_t)b->n * sizeof *x->keys);
  x->cfs = malloc((size_t)b->n * sizeof *x->cfs);
  x->nodes = calloc((size_t)b->n, sizeof *x->nodes);
  x->dims = malloc((size_t)b->n * sizeof *x->dims);
  x->values = malloc(b->bytes ? b->bytes : 1);
  x->bytes = b->bytes;
  if (x->keys && x->cfs && x->nodes && x->dims && x->values &&
      mc_cu.cuGraphCreate(&x->graph, 0) == 0) {
    ok = 1;
    void *params[MAX_ARGS];
    for (int i = 0; i < b->n && ok; ++i) {
      seg_launch *s = &b->l[i];
      params_of(s, b->args, params);
      CUDA_KERNEL_NODE_PARAMS p;
      node_params(&p, s, params);
      ok = mc_cu.cuGraphAddKernelNode(&x->nodes[i], x->graph, i ? &x->nodes[i - 1] : NULL,
                                      i ? 1 : 0, &p) == 0;
      x->keys[i] = s->key;
      x->cfs[i] = s->cf;
      x->dims[i] = s->d;
    }
    if (ok) memcpy(x->values, b->args, b->bytes);
    if (ok && mc_cu.cuGraphInstantiate(&x->exec, x->graph, 0) != 0) {
      x->exec = NULL;
      ok = 0;
    }
  }
  mc_ctx_leave(&scope);
  free(b);
  if (!ok) {
    chain_exec_free(x);
    return;
  }
  MC_STAT_INC(chain_instantiates);
  chain_exec *victim = NULL;
  mc_lock_take(&g_chain.lock);
  int slot = -1;
  for (int c = 0; c < CACHE && slot < 0; ++c)
    if (!g_chain.cache[c]) slot = c;
  if (slot < 0) {
    slot = 0;
    for (int c = 1; c < CACHE; ++c)
      if (g_chain.cache[c]->last_use < g_chain.cache[slot]->last_use) slot = c;
    victim = g_chain.cache[slot];
  }
  x->last_use = ++g_chain.tick;
  g_chain.cache[slot] = x;
  mc_lock_give(&g_chain.lock);
  chain_exec_free(victim);
}

static void finish(build_req *req, prep_req *prep, chain_exec *victim) {
  if (!req && !prep && !victim) return;
  mc_relaxed relaxed; /* the library's own graph calls: relaxed mode (capture.h) */
  mc_relaxed_enter(&relaxed);
  chain_exec_free(victim);
  if (req) build(req);
  if (prep) {
    mc_ctx_scope scope;
    if (!MC_FAILED(mc_ctx_enter(prep->device, &scope))) {
      mc_graph_prepare(prep->key, prep->cf, prep->stream, &prep->d, prep->params);
      mc_ctx_leave(&scope);
    }
    free(prep);
  }
  mc_relaxed_leave(&relaxed);
}

/* ---- entry points ---- */

_Static_assert(MC_MAX_DEVICES <= 64, "verify_owed has a bit per device");

void mc_chain_load_verify(int device) {
  if (!__atomic_load_n(&g_chain.pending, __ATOMIC_ACQUIRE)) {
    mc_ctx_verify(device);
    return;
  }
  if (device < 0 || device >= MC_MAX_DEVICES) return; /* mc_ctx_verify checks nothing there */
  uint64_t bit = (uint64_t)1 << device;
  if (!(__atomic_load_n(&g_chain.verify_owed, __ATOMIC_ACQUIRE) & bit)) /* not owed yet */
    __atomic_fetch_or(&g_chain.verify_owed, bit, __ATOMIC_ACQ_REL);
}

void mc_chain_settle_verify_used(void) {
  if (!__atomic_load_n(&g_chain.verify_owed, __ATOMIC_ACQUIRE)) return;
  uint64_t owed = __atomic_exchange_n(&g_chain.verify_owed, 0, __ATOMIC_ACQ_REL);
  for (int d = 0; owed; ++d, owed >>= 1) /* no lock held: a recovery drops the pending launches */
    if (owed & 1) mc_ctx_verify(d);
}

/* What a flush submits, and which kept stream survives it: FLUSH_ANY everything, none;
 * FLUSH_OTHER (a launch on `handle`) everything unless pending on `handle`, one kept on
 * `handle`; FLUSH_SYNC (a synchronisation of `handle`) everything, and a segment of `handle`'s
 * ends with the stream kept (as does one kept already). */
enum { FLUSH_OTHER, FLUSH_ANY, FLUSH_SYNC };

static mc_status flush_unless(CUstream handle, int mode) __attribute__((noinline));
static mc_status flush_unless(CUstream handle, int mode) {
  if (__atomic_load_n(&g_chain.has_unreported, __ATOMIC_ACQUIRE)) {
    mc_lock_take(&g_chain.lock);
    mc_status st = g_chain.unreported;
    int had = g_chain.has_unreported;
    __atomic_store_n(&g_chain.has_unreported, 0, __ATOMIC_RELEASE);
    mc_lock_give(&g_chain.lock);
    mc_status st2 = flush_unless(handle, mode);
    return had ? st : st2;
  }
  if (!__atomic_load_n(&g_chain.pending, __ATOMIC_ACQUIRE)) {
    /* a kept stream other than `handle` is let go (FLUSH_ANY: handle NULL, never kept) */
    if (__atomic_load_n(&g_chain.kept, __ATOMIC_ACQUIRE) &&
        __atomic_load_n(&g_chain.kept_handle, __ATOMIC_ACQUIRE) != handle) {
      mc_lock_take(&g_chain.lock);
      if (g_chain.kept_handle != handle) drop_kept_locked(NULL);
      mc_lock_give(&g_chain.lock);
    }
    return MC_OK;
  }
  /* A launch on the pending stream: nothing to do (mc_chain_defer checks again under the lock,
   * so a stale read here only costs that check). */
  if (mode == FLUSH_OTHER && __atomic_load_n(&g_chain.handle, __ATOMIC_ACQUIRE) == handle)
    return MC_OK;
  mc_chain_settle_verify(); /* before anything pending is submitted (chain.h) */
  build_req *req = NULL;
  prep_req *prep = NULL;
  chain_exec *victim = NULL;
  mc_status st = MC_OK;
  mc_lock_take(&g_chain.lock);
  if (g_chain.n && (mode != FLUSH_OTHER || g_chain.handle != handle))
    st = submit_locked(&req, &prep, &victim, 0, mode == FLUSH_SYNC && g_chain.handle == handle);
  if (g_chain.kept_handle != handle) drop_kept_locked(NULL);
  mc_lock_give(&g_chain.lock);
  finish(req, prep, victim);
  return st;
}

mc_status mc_chain_flush_used(void) { return flush_unless(NULL, FLUSH_ANY); }

mc_status mc_chain_flush_sync_used(CUstream handle) { return flush_unless(handle, FLUSH_SYNC); }

/* The launch path's call (abi_cuda.c: before every launch while chain replay was ever used): a
 * launch on the pending stream, with no failure to report, returns here without flush_unless's
 * frame (the same reads, in its order). */
mc_status mc_chain_flush_other_used(CUstream handle) {
  if (!__atomic_load_n(&g_chain.has_unreported, __ATOMIC_ACQUIRE) &&
      (!__atomic_load_n(&g_chain.pending, __ATOMIC_ACQUIRE) ||
       __atomic_load_n(&g_chain.handle, __ATOMIC_ACQUIRE) == handle))
    return MC_OK;
  return flush_unless(handle, FLUSH_OTHER);
}

static void chain_flush_at_exit(void) { (void)mc_chain_flush_used(); }

/* The module cache's unload hook (module_cache.h): pending launches may use the kernels of the
 * modules about to be unloaded (a load that replaced or evicted a cached module flushes nothing
 * by itself), so they are submitted first; a failure is kept for the next call that flushes. */
static void flush_before_unload(void) { /* installed at the first deferred launch */
  mc_status st = mc_chain_flush_used();
  if (!MC_FAILED(st)) return;
  mc_lock_take(&g_chain.lock);
  if (!g_chain.has_unreported) {
    g_chain.unreported = st;
    __atomic_store_n(&g_chain.has_unreported, 1, __ATOMIC_RELEASE);
  }
  mc_lock_give(&g_chain.lock);
}

/* The number of launches at which a segment of launches on `handle` is submitted early (head
 * start, above), or 0 (lock held). */
static int split_at_locked(CUstream handle) {
  if (g_chain.headed) return 2 * g_chain.chain_len < MAX_SEG ? 2 * g_chain.chain_len : MAX_SEG;
  if (!g_chain.chain_len && g_chain.last_chain == handle && g_chain.last_chain_len >= 2 * HEAD)
    return HEAD;
  return 0;
}

/* One more pending launch, its argument values copied (lock held; room checked by the caller). */
static void append_locked(const void *key, CUfunction cf, const mc_graph_dims *d, const pinfo *pi,
                          void **params) {
  seg_launch *s = &g_chain.l[g_chain.n++];
  s->key = key;
  s->cf = cf;
  s->d = *d;
  s->pi = pi;
  s->argoff = g_chain.argused;
  for (int a = 0; a < pi->n; ++a) {
    memcpy(g_chain.args + g_chain.argused, params[a], pi->size[a]);
    g_chain.argused += pi->size[a];
  }
}

/* A segment begins on `handle`, holding the handle's use `use` until it is submitted (use->rec
 * becomes NULL: the segment's now). Lock held, nothing pending. */
static void begin_segment_locked(CUstream handle, mc_stream_use *use) {
  g_chain.split_at = split_at_locked(handle);
  g_chain.use = *use;
  use->rec = NULL;
  __atomic_store_n(&g_chain.handle, handle, __ATOMIC_RELEASE);
}

/* Whether a launch with argument sizes `pi` fits the pending segment (lock held). */
static int fits_locked(const pinfo *pi, void **params) {
  return !(pi->n && !params) && g_chain.argused + pi->bytes <= ARG_BYTES;
}

int mc_chain_defer(CUstream handle, mc_stream_use *use, mc_ctx_scope *scope, const void *key,
                   CUfunction cf, const mc_graph_dims *d, void **params, mc_status *st) {
  *st = MC_OK;
  build_req *req = NULL;
  prep_req *prep = NULL;
  chain_exec *victim = NULL;
  mc_lock_take(&g_chain.lock);
  const pinfo *pi = param_info_locked(key, cf, scope);
  int deferrable = pi && pi->n >= 0 && (pi->n == 0 || params);
  if (g_chain.n && (!deferrable || g_chain.handle != handle || g_chain.n == MAX_SEG ||
                    g_chain.argused + (pi ? pi->bytes : 0) > ARG_BYTES))
    *st = submit_locked(&req, &prep, &victim, deferrable && g_chain.handle == handle, 0);
  if (deferrable && pi->bytes > ARG_BYTES) deferrable = 0;
  if (deferrable) {
    if (!g_chain.n) {
      drop_kept_locked(handle); /* a kept stream's use (this handle's too: the launch has its
                                   own); the memo stays for a segment on the kept handle */
      begin_segment_locked(handle, use);
      if (!g_chain.exit_registered) { /* after cuInit's own exit handler: runs before it */
        g_chain.exit_registered = atexit(chain_flush_at_exit) == 0;
        mc_module_set_unload_hook(flush_before_unload);
      }
    }
    append_locked(key, cf, d, pi, params);
    __atomic_store_n(&mc_chain_used, 1, __ATOMIC_RELEASE); /* before pending (chain.h) */
    __atomic_store_n(&g_chain.pending, 1, __ATOMIC_RELEASE);
    MC_STAT_INC(chain_deferred);
    if (g_chain.n == g_chain.split_at && !req && !prep && !victim) { /* head start */
      if (!g_chain.headed) MC_STAT_INC(chain_heads);
      mc_status hst = submit_locked(&req, &prep, &victim, 1, 0);
      g_chain.headed = 1;
      if (!MC_FAILED(*st)) *st = hst;
    }
  }
  mc_lock_give(&g_chain.lock);
  finish(req, prep, victim);
  return deferrable;
}

/* Append a launch of `key` whose CUfunction and argument sizes an earlier launch gave: 1, or 0
 * when it does not fit the segment (lock held; the segment is pending on the launch's handle). */
static inline int append_as_locked(const void *key, CUfunction cf, const pinfo *pi,
                                   const mc_graph_dims *d, void **params) {
  if (!fits_locked(pi, params)) return 0;
  append_locked(key, cf, d, pi, params);
  return 1;
}

/* mc_chain_append past the launch before: a launch of `key` among the segment's last LOOKBACK,
 * else in the memo of the kept chain the segment began from (lock held). */
static int append_found_locked(CUstream handle, const void *key, const mc_graph_dims *d,
                               void **params) __attribute__((noinline));
static int append_found_locked(CUstream handle, const void *key, const mc_graph_dims *d,
                               void **params) {
  int n = g_chain.n;
  for (int j = n - 2; j >= 0 && j >= n - LOOKBACK; --j) {
    const seg_launch *p = &g_chain.l[j];
    if (p->key == key && p->d.smem == d->smem)
      return append_as_locked(key, p->cf, p->pi, d, params);
  }
  int m = memo_find_locked(handle, key, d->smem); /* a kernel of the kept chain */
  return m >= 0 && append_as_locked(key, g_chain.memo[m].cf, g_chain.memo[m].pi, d, params);
}

/* The first launch of a chain on the kept stream (kept stream, above): 1 when it began the
 * segment, 0 for the full path. */
static int append_kept(CUstream handle, const void *key, const mc_graph_dims *d, void **params) {
  /* a module unloaded by another thread since the memo's launch: the full path reports it */
  if (!mc_function_live(key)) return 0;
  int done = 0;
  mc_lock_take(&g_chain.lock);
  int j = !g_chain.n && g_chain.kept && g_chain.kept_handle == handle
              ? memo_find_locked(handle, key, d->smem)
              : -1;
  if (j >= 0 && fits_locked(g_chain.memo[j].pi, params)) {
    __atomic_store_n(&g_chain.kept_handle, NULL, __ATOMIC_RELEASE);
    __atomic_store_n(&g_chain.kept, 0, __ATOMIC_RELEASE);
    begin_segment_locked(handle, &g_chain.kept_use); /* the kept use taken over; memo stays */
    append_locked(key, g_chain.memo[j].cf, d, g_chain.memo[j].pi, params);
    __atomic_store_n(&g_chain.pending, 1, __ATOMIC_RELEASE);
    MC_STAT_INC(chain_kept_starts);
    done = 1;
  }
  mc_lock_give(&g_chain.lock);
  return done;
}

int mc_chain_append_used(CUstream handle, const void *key, const mc_graph_dims *d,
                         void **params) {
  if (!__atomic_load_n(&g_chain.pending, __ATOMIC_ACQUIRE))
    return __atomic_load_n(&g_chain.kept, __ATOMIC_ACQUIRE) &&
           __atomic_load_n(&g_chain.kept_handle, __ATOMIC_ACQUIRE) == handle &&
           append_kept(handle, key, d, params);
  if (__atomic_load_n(&g_chain.handle, __ATOMIC_ACQUIRE) != handle) return 0;
  /* a module unloaded by another thread since the earlier launch: the full path reports it */
  if (!mc_function_live(key)) return 0;
  int done = 0;
  mc_lock_take(&g_chain.lock);
  int n = g_chain.n;
  /* the launch at which the segment is submitted early takes the full path (mc_chain_defer) */
  if (n && n < MAX_SEG && g_chain.handle == handle && n + 1 != g_chain.split_at) {
    const seg_launch *p = &g_chain.l[n - 1]; /* most often the kernel launched last */
    if (p->key == key && p->d.smem == d->smem)
      done = append_as_locked(key, p->cf, p->pi, d, params);
    else
      done = append_found_locked(handle, key, d, params);
  }
  mc_lock_give(&g_chain.lock);
  return done; /* counted by the caller (launch.c), with the launch */
}

/* Forget the segments and chains seen and every chain exec (never launched or destroyed again:
 * leaked); lock held, or the only thread (fork child). */
static void forget_history(void) {
  memset(g_chain.recent, 0, sizeof g_chain.recent);
  g_chain.chain_len = 0;
  g_chain.headed = 0;
  g_chain.last_chain = NULL;
  g_chain.last_chain_len = 0;
  memset(g_chain.cache, 0, sizeof g_chain.cache);
}

/* ---- faults (issue 19 item 5): a primary context was reset (context.h) ----
 * Pending launches are dropped (their kernels and stream belong to the dead context: submitting
 * them could only report CONTEXT_IS_DESTROYED; the stream's use is ended), and every chain exec is
 * forgotten (never launched or destroyed again; leaked). */
void mc_chain_forget_device(int device) {
  (void)device;
  mc_lock_take(&g_chain.lock);
  if (g_chain.n) mc_stream_use_end(&g_chain.use);
  drop_kept_locked(NULL);
  g_chain.memo_n = 0; /* the kernels' CUfunctions belong to the dead context */
  g_chain.memo_handle = NULL;
  g_chain.n = 0;
  g_chain.argused = 0;
  __atomic_store_n(&g_chain.handle, NULL, __ATOMIC_RELEASE);
  __atomic_store_n(&g_chain.pending, 0, __ATOMIC_RELEASE);
  forget_history();
  mc_lock_give(&g_chain.lock);
}

/* ---- fork ---- */

void mc_chain_fork_prepare(void) { mc_lock_take(&g_chain.lock); }
void mc_chain_fork_parent(void) { mc_lock_give(&g_chain.lock); }
void mc_chain_fork_child(void) {
  /* The parent's pending launches stay the parent's (submitted there); the child forgets them and
   * its chain execs (memory leaked, no driver call). */
  g_chain.n = 0;
  g_chain.argused = 0;
  g_chain.pending = 0;
  g_chain.has_unreported = 0;
  g_chain.handle = NULL;
  g_chain.use.rec = NULL;
  g_chain.kept = 0;
  g_chain.kept_handle = NULL;
  g_chain.kept_use.rec = NULL;
  g_chain.memo_n = 0;
  g_chain.memo_handle = NULL;
  forget_history();
  memset(g_chain.pinfos, 0, sizeof g_chain.pinfos);
  g_chain.lock = (mc_lock)MC_LOCK_INIT;
}
