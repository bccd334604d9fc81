/* pool.c - stream and event handles and the pools of driver objects behind them (see pool.h).
 *
 * Two handle models (pool.h). Driver handles (the default) are the section "driver handles"
 * near the end: a drv_obj per driver object, found by pointer (handle_map.h), and the per-device
 * pools below. Everything else in this file up to that section is the tagged model
 * (MGPU_CACHED_STREAM_HANDLES=tagged); each public function starts by picking its model.
 *
 * Tagged handles. A handle is  tag << 56 | generation << 32 | slot  (tag 0xC5 streams, 0xCE events:
 * values no user-space pointer can take, so foreign handles are told apart by their top byte).
 * Slots live in a table of chunks that never shrinks; a destroyed handle's slot is reused with the
 * next generation (24 bits: a stale handle could alias only after 16M reuses of its slot).
 *
 * Each record has an atomic `word`: generation << 32 | LOCK | DYING | users.
 *   - A *use* (an enqueue on a stream, a record/wait/sync on an event, a stream synchronisation)
 *     adds a user for the duration of its driver call, after checking the generation; it spins
 *     while LOCK is set (LOCK is held only for non-blocking work).
 *   - `bound` (the driver object) goes from NULL to an object under g_pool.lock by a use, and from
 *     an object to NULL (or to another object) only under LOCK, which is taken only when there
 *     are no users: so a use's driver object cannot change under it, and an unbind never races an
 *     enqueue.
 *   - mgpu*Destroy sets DYING (new uses fail as stale); whoever brings the record to zero users
 *     with DYING set (the destroyer itself, or the last use to end) finishes the destruction: the
 *     driver object goes back to the pool, the slot to the free list with the next generation.
 *     Destroy never waits for a use, so it never waits for the device.
 *   - `seq` counts uses begun. mgpuStreamSynchronize holds a use across cuStreamSynchronize; if it
 *     was the only user when it began and, afterwards, it can turn its use into LOCK with the word
 *     unchanged and `seq` unchanged, no other use began meanwhile: everything ever enqueued on the
 *     driver stream has completed, and the stream is unbound and pooled without a query (the
 *     "known idle" give-back that saves ~1.5 us per synchronous launch). The driver stream never
 *     left the library unless pinned (mgpu_cached_driver_handle), so nothing else can have
 *     enqueued on it.
 *
 * Stream cap (MGPU_CACHED_STREAM_CAP, default 64 driver streams per device; 0 = no cap). Generated
 * async loops leak one stream handle per joined chain (never destroyed: see the reference notes).
 * Such handles keep their driver stream only while they may have work: when a bind finds the
 * device at the cap and no pooled stream, it takes the driver stream of a live, unpinned handle
 * that has no user (LOCK taken by try, never waited for) and whose driver stream cuStreamQuery
 * reports complete: that handle has no pending work, so nothing it did is lost or reordered, and
 * its next use binds again. Only where every bound handle still has work does the device go past
 * the cap. No two handles ever hold one driver stream, so the library adds no order between them.
 *
 * Locking rule (both models). g_pool.lock guards handle_map.h's inserts, the slot table's growth and free list, every record's kind,
 * device (streams) and bpos, the per-device lists (idle, draining driver objects; bound
 * stream records) and counts, and every write of `bound` from NULL. Under it the only driver calls
 * are cuStreamQuery / cuEventQuery (non-blocking; the library's own, so in relaxed capture mode:
 * is_ready). Driver handles hold no lock and no use count across any driver call. Creating driver objects (and entering a
 * context for it) happens outside it. Order: a record's LOCK may be held while taking g_pool.lock;
 * under g_pool.lock a record's LOCK is only tried, never waited for.
 */
#include "streams/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "platform/capture.h"
#include "support/config.h"
#include "platform/context.h"
#include "platform/driver.h"
#include "streams/handle_map.h"
#include "support/stats.h"
#include "support/thread.h"

#define TAG_STREAM 0xC5u
#define TAG_EVENT 0xCEu
#define GEN_MASK 0xFFFFFFu
#define W_LOCK (1ull << 31)
#define W_DYING (1ull << 30)
#define W_USERS 0x3FFFFFFFull
#define W_GEN(w) ((uint32_t)((w) >> 32) & GEN_MASK)

#define CHUNK_BITS 12
#define CHUNK (1u << CHUNK_BITS)
#define MAX_CHUNKS 4096u /* 16M slots */
#define DRAIN_CHECKS 4   /* draining objects polled per take when none is idle */
#define RECLAIM_CHECKS 8 /* bound handles tried per bind at the stream cap */
#define POLL_ALL_ABOVE 64 /* driver objects of a kind on a device above which a take that found
                             no idle one polls every draining one before a new one is made */
#define SYNC_POLLS 2      /* driver handles: draining objects a synchronisation polls first */
#define SPARE_DRAIN 1     /* driver handles: while at most this many objects of a kind drain on a
                             device, a take that finds none idle makes a new one without polling */
                          /* ... after the device's first MGPU_CACHED_POOL_SPARE_AFTER takes of
                             the kind (config.h): those poll (a new driver stream beside a live
                             one cost the H100 120-270 us in run N2, a query ~1 us) */

/* One cache line per record: threads using different handles never contend on a line. */
typedef struct __attribute__((aligned(64))) obj_rec {
  uint64_t word;      /* atomic: generation, LOCK, DYING, users (rules above) */
  uint64_t seq;       /* atomic: uses begun */
  void *bound;        /* atomic: driver CUstream / CUevent, or NULL (rules above) */
  int32_t device;     /* stream: its device, set at create; event: device of `bound` (under LOCK
                         or at create) */
  uint8_t kind;       /* mc_obj_kind; under g_pool.lock, fixed while live */
  uint8_t pinned;     /* atomic: the driver object was given to the program: never unbound */
  uint32_t next_free; /* free list link (slot + 1, 0 = end); under g_pool.lock */
  uint32_t bpos;      /* stream: 1 + position in its device's bound list, 0 = absent; pool lock */
  uint32_t slot;      /* this record's slot; immutable once the chunk is made */
  uint64_t idle_seq;  /* stream: `seq` when the idle driver stream in `bound` was bound at create;
                         UINT64_MAX after a bind inside a use; under g_pool.lock. A destroy that
                         finds `seq` still equal gives the stream back without a query */
} obj_rec;

typedef struct obj_list {
  void **items; /* owned array */
  size_t n, cap;
} obj_list;

typedef struct dev_pool {
  obj_list idle[2];     /* [kind - 1]: driver objects known idle (tagged: LIFO; driver
                           handles: oldest first) */
  obj_list draining[2]; /* [kind - 1]: given back maybe busy, oldest first */
  uint32_t *bound;      /* slots of stream records holding a driver stream (owned array) */
  size_t nbound, capbound;
  size_t cursor;        /* where the next reclaim scan starts */
  size_t drain_cursor[2]; /* [kind - 1]: the draining object the next poll starts at */
  size_t nobjs[2];      /* [kind - 1]: driver objects made for this device */
  size_t takes[2];      /* [kind - 1]: takes so far, counted up to MGPU_CACHED_POOL_SPARE_AFTER */
  size_t ndrain;        /* atomic: draining[0].n + draining[1].n, stored under g_pool.lock after
                           every change; read without it as a hint (d_sync_poll) */
} dev_pool;

static struct {
  pthread_mutex_t lock;         /* see the locking rule above */
  uint32_t nslots;              /* slots ever used */
  uint32_t free_head;           /* free list (slot + 1) */
  uint32_t gen_base;            /* first generation of new slots (moves on at fork) */
  dev_pool devs[MC_MAX_DEVICES];
  obj_rec *chunks[MAX_CHUNKS];  /* atomic pointers; published with release, never freed */
} g_pool = {.lock = PTHREAD_MUTEX_INITIALIZER, .gen_base = 1};

/* The handle model (MGPU_CACHED_STREAM_HANDLES): 1 for driver handles (the default), 0 for tagged. */
static inline int direct_mode(void) { return mc_config()->stream_handles == 0; }

/* ---- handles and records ---- */

typedef enum { H_FOREIGN = 0, H_STALE = 1, H_OURS = 2 } h_class;

static inline void *make_handle(unsigned tag, uint32_t gen, uint32_t slot) {
  return (void *)(((uintptr_t)tag << 56) | ((uintptr_t)(gen & GEN_MASK) << 32) | slot);
}

static inline obj_rec *slot_rec(uint32_t slot) {
  obj_rec *c = __atomic_load_n(&g_pool.chunks[slot >> CHUNK_BITS], __ATOMIC_ACQUIRE);
  return c ? &c[slot & (CHUNK - 1)] : NULL;
}

/* What a handle is: a live handle of ours (its record, generation and kind), a stale one of ours
 * (its generation and kind; destroyed, or never handed out), or foreign. No lock. */
typedef struct h_ref {
  h_class c;
  obj_rec *rec;     /* H_OURS only */
  uint32_t gen;     /* H_OURS, H_STALE */
  mc_obj_kind kind; /* H_OURS, H_STALE */
} h_ref;

static h_ref classify(const void *h) {
  h_ref ref = {H_FOREIGN, NULL, 0, MC_OBJ_NONE};
  uintptr_t v = (uintptr_t)h;
  unsigned tag = (unsigned)(v >> 56);
  if (tag != TAG_STREAM && tag != TAG_EVENT) return ref;
  uint32_t slot = (uint32_t)v;
  ref.c = H_STALE;
  ref.gen = (uint32_t)(v >> 32) & GEN_MASK;
  ref.kind = tag == TAG_STREAM ? MC_OBJ_STREAM : MC_OBJ_EVENT;
  if ((slot >> CHUNK_BITS) >= MAX_CHUNKS) return ref;
  obj_rec *r = slot_rec(slot);
  if (!r) return ref;
  uint64_t w = __atomic_load_n(&r->word, __ATOMIC_ACQUIRE);
  if (W_GEN(w) != ref.gen || (w & W_DYING)) return ref;
  ref.c = H_OURS;
  ref.rec = r;
  return ref;
}

static void spin_pause(unsigned *spins) {
  if (++*spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  } else {
    sched_yield();
  }
}

/* Change a live record's word of generation `gen` to (w + add) | set, waiting while LOCK is held
 * (its holders only do non-blocking work): 0 with the word before the change in *before, or -1 if
 * the handle is stale (another generation, or DYING). */
static int word_change(obj_rec *r, uint32_t gen, uint64_t add, uint64_t set, uint64_t *before) {
  unsigned spins = 0;
  uint64_t w = __atomic_load_n(&r->word, __ATOMIC_ACQUIRE);
  for (;;) {
    if (W_GEN(w) != gen || (w & W_DYING)) return -1;
    if (w & W_LOCK) {
      spin_pause(&spins);
      w = __atomic_load_n(&r->word, __ATOMIC_ACQUIRE);
      continue;
    }
    if (__atomic_compare_exchange_n(&r->word, &w, (w + add) | set, 1, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
      break;
  }
  *before = w;
  return 0;
}

/* Begin a use of a record of generation `gen`: 0, or -1 if the handle is stale. The word right
 * after this use's increment and the use count including it go to *w_after / *seq_after when
 * given (mgpuStreamSynchronize's known-idle check). */
static int use_begin_at(obj_rec *r, uint32_t gen, uint64_t *w_after, uint64_t *seq_after) {
  uint64_t w = 0;
  /* `seq` before the users increment: a use that begins after this use's increment (and so is
   * not counted in *w_after) increments `seq` after this load, so *seq_after = s0 + 1 misses it
   * only if it began earlier (R27: it was taken after the increment, missing such a use) */
  uint64_t s0 = __atomic_load_n(&r->seq, __ATOMIC_SEQ_CST);
  if (word_change(r, gen, 1, 0, &w) != 0) return -1;
  uint64_t seq = __atomic_add_fetch(&r->seq, 1, __ATOMIC_SEQ_CST);
  (void)seq;
  if (w_after) *w_after = w + 1;
  if (seq_after) *seq_after = s0 + 1;
  return 0;
}

static int use_begin(obj_rec *r, uint32_t gen) { return use_begin_at(r, gen, NULL, NULL); }

static void finish_destroy(obj_rec *r);

static void use_end(obj_rec *r) {
  uint64_t w = __atomic_fetch_sub(&r->word, 1, __ATOMIC_ACQ_REL);
  if ((w & W_DYING) && (w & W_USERS) == 1) finish_destroy(r);
}

/* Take LOCK, waiting for users to end: 0, or -1 if the handle is stale. */
static int lock_record(obj_rec *r, uint32_t gen) {
  unsigned spins = 0;
  for (;;) {
    uint64_t w = __atomic_load_n(&r->word, __ATOMIC_ACQUIRE);
    if (W_GEN(w) != gen || (w & W_DYING)) return -1;
    if (!(w & (W_LOCK | W_USERS)) &&
        __atomic_compare_exchange_n(&r->word, &w, w | W_LOCK, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
      return 0;
    spin_pause(&spins);
  }
}

/* Try LOCK without waiting (records of any generation): 1 if taken. */
static int try_lock_record(obj_rec *r) {
  uint64_t w = __atomic_load_n(&r->word, __ATOMIC_ACQUIRE);
  if (w & (W_LOCK | W_DYING | W_USERS)) return 0;
  return __atomic_compare_exchange_n(&r->word, &w, w | W_LOCK, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE);
}

static void unlock_record(obj_rec *r) { __atomic_fetch_and(&r->word, ~W_LOCK, __ATOMIC_RELEASE); }

/* ---- lists (lock held) ---- */

static int list_push(obj_list *l, void *p) {
  if (l->n == l->cap) {
    size_t ncap = l->cap ? l->cap * 2 : 16;
    void **n = realloc(l->items, ncap * sizeof *n);
    if (!n) return -1;
    l->items = n;
    l->cap = ncap;
  }
  l->items[l->n++] = p;
  return 0;
}

static void bound_add(dev_pool *p, obj_rec *r) {
  if (r->bpos) return;
  if (p->nbound == p->capbound) {
    size_t ncap = p->capbound ? p->capbound * 2 : 64;
    uint32_t *n = realloc(p->bound, ncap * sizeof *n);
    if (!n) return; /* not listed: never reclaimed, still correct */
    p->bound = n;
    p->capbound = ncap;
  }
  p->bound[p->nbound++] = r->slot;
  r->bpos = (uint32_t)p->nbound;
}

static void bound_remove(dev_pool *p, obj_rec *r) {
  if (!r->bpos) return;
  size_t i = r->bpos - 1;
  uint32_t last = p->bound[--p->nbound];
  if (i < p->nbound) {
    p->bound[i] = last;
    obj_rec *lr = slot_rec(last);
    if (lr) lr->bpos = (uint32_t)(i + 1);
  }
  r->bpos = 0;
}

/* Whether a pooled driver object's work has completed. The library's own query (stock makes none
 * here): in relaxed capture mode, so another thread's global-mode capture stays valid (capture.h). */
static int query_ready(mc_obj_kind kind, void *h) { /* the caller is in relaxed mode */
  CUresult r = kind == MC_OBJ_STREAM ? mc_cu.cuStreamQuery((CUstream)h)
                                     : mc_cu.cuEventQuery((CUevent)h);
  return r == 0;
}

static int is_ready(mc_obj_kind kind, void *h) {
  mc_relaxed rx;
  mc_relaxed_enter(&rx);
  int ready = query_ready(kind, h);
  mc_relaxed_leave(&rx);
  return ready;
}

static void drain_hint_locked(dev_pool *p) {
  __atomic_store_n(&p->ndrain, p->draining[0].n + p->draining[1].n, __ATOMIC_RELAXED);
}

static void stat_pooled(mc_obj_kind kind, int delta) {
  mc_stat_add(kind == MC_OBJ_STREAM ? MC_STAT_pooled_streams : MC_STAT_pooled_events, delta);
}

/* Give a driver object back to its device's pool: idle if known or found ready, else draining. */
static void give_back_locked(mc_obj_kind kind, int device, void *obj, int known_idle) {
  if (!obj || device < 0 || device >= MC_MAX_DEVICES) return;
  dev_pool *p = &g_pool.devs[device];
  int ready = known_idle || is_ready(kind, obj);
  if (list_push(ready ? &p->idle[kind - 1] : &p->draining[kind - 1], obj) == 0)
    stat_pooled(kind, 1);
  /* else: dropped (never reused, never destroyed): harmless */
  drain_hint_locked(p);
}

struct drv_obj; /* driver handles' records (below) */
/* driver handles: the parks + 1 of obj's drv_obj, `r` when the caller holds it, else found (below) */
static void count_park_locked(struct drv_obj *r, void *obj);

/* Driver handles: give a driver object back to the draining list without asking the driver (no
 * driver call). It is reused only once a later poll finds it complete: a synchronisation's
 * (d_sync_poll), or a take's, or a fence that covers it (mc_pool_parked_idle). */
static void park_locked(mc_obj_kind kind, int device, void *obj, struct drv_obj *r) {
  if (!obj || device < 0 || device >= MC_MAX_DEVICES) return;
  dev_pool *p = &g_pool.devs[device];
  count_park_locked(r, obj);
  if (list_push(&p->draining[kind - 1], obj) == 0) stat_pooled(kind, 1);
  drain_hint_locked(p);
}

/* The draining object at index j of `kind` on `p` is complete: to the idle list (lock held). */
static void drain_to_idle_locked(dev_pool *p, mc_obj_kind kind, size_t j) {
  obj_list *dr = &p->draining[kind - 1];
  void *h = dr->items[j];
  dr->items[j] = dr->items[--dr->n];
  if (list_push(&p->idle[kind - 1], h) != 0) stat_pooled(kind, -1);
}

/* Poll up to `checks` draining objects of `kind` on `p` other than `skip`, each at most once, round
 * the list (drain_cursor: objects that never complete, behind a kernel that never ends, do not
 * hide the ones after them), moving those the driver reports complete to the idle list; stops at
 * the first one found when `one`. The caller is in relaxed mode when `relaxed`, else each query is
 * bracketed. Returns the number polled. Lock held. */
static size_t drain_poll_locked(dev_pool *p, mc_obj_kind kind, size_t checks, int one, int relaxed,
                                const void *skip) {
  obj_list *dr = &p->draining[kind - 1];
  size_t *cur = &p->drain_cursor[kind - 1], polled = 0;
  for (size_t visits = dr->n; visits && dr->n && polled < checks; --visits) {
    if (*cur >= dr->n) *cur = 0;
    void *h = dr->items[*cur];
    if (h == skip) { /* given back by the calling thread just before (d_sync_poll): not now */
      ++*cur;
      continue;
    }
    ++polled;
    if (relaxed ? query_ready(kind, h) : is_ready(kind, h)) {
      drain_to_idle_locked(p, kind, *cur); /* *cur names the next one now */
      if (one) break;
    } else {
      ++*cur;
    }
  }
  drain_hint_locked(p);
  return polled;
}

/* An idle driver object of `kind` on `p`, polling up to `checks_max` draining ones if none is
 * idle. The polls go round the draining list (drain_cursor): objects that never complete (behind
 * a kernel that never ends) do not hide the ones after them. */
static void *take_idle_locked(dev_pool *p, mc_obj_kind kind, size_t checks_max) {
  obj_list *idle = &p->idle[kind - 1];
  if (idle->n == 0 && checks_max) drain_poll_locked(p, kind, checks_max, 1, 0, NULL);
  if (idle->n == 0) return NULL;
  stat_pooled(kind, -1);
  if (!direct_mode()) return idle->items[--idle->n];
  /* Driver handles: the oldest first. Objects then go round in the order the program gives them
   * back, so a loop that makes its streams in the same order each step gets the same driver
   * stream for the same launch each step (the graph path keeps its execs per stream), e.g. an
   * async step's three streams with the synchronisations' polls (d_sync_poll). */
  void *obj = idle->items[0];
  memmove(idle->items, idle->items + 1, --idle->n * sizeof *idle->items);
  return obj;
}

/* At the stream cap: the driver stream of a live, unpinned, unused handle whose work has all
 * completed (see the stream cap above), unbound from it; or NULL. */
static void *reclaim_locked(dev_pool *p, obj_rec *self) {
  size_t tries = p->nbound < RECLAIM_CHECKS ? p->nbound : RECLAIM_CHECKS;
  for (size_t t = 0; t < tries && p->nbound; ++t) {
    if (p->cursor >= p->nbound) p->cursor = 0;
    obj_rec *r = slot_rec(p->bound[p->cursor]);
    if (!r || r == self || __atomic_load_n(&r->pinned, __ATOMIC_ACQUIRE) || !try_lock_record(r)) {
      p->cursor++;
      continue;
    }
    void *d = __atomic_load_n(&r->bound, __ATOMIC_ACQUIRE);
    if (d && is_ready(MC_OBJ_STREAM, d)) {
      __atomic_store_n(&r->bound, NULL, __ATOMIC_RELEASE);
      bound_remove(p, r); /* the cursor now names the record moved into this place */
      unlock_record(r);
      MC_STAT_INC(stream_reclaims);
      return d;
    }
    unlock_record(r);
    p->cursor++;
  }
  return NULL;
}

/* A new driver object of `kind` on `device` (outside the lock; streams are counted on their
 * device under it). */
static mc_status make_driver_object(mc_obj_kind kind, int device, void **out) {
  *out = NULL;
  mc_ctx_scope scope;
  mc_status st = mc_ctx_enter(device, &scope);
  if (MC_FAILED(st)) return st;
  CUresult res;
  if (kind == MC_OBJ_STREAM) {
    CUstream s = NULL;
    res = mc_cu.cuStreamCreate(&s, MC_CU_STREAM_NON_BLOCKING);
    *out = s;
  } else {
    CUevent e = NULL;
    res = mc_cu.cuEventCreate(&e, MC_CU_EVENT_DISABLE_TIMING);
    *out = e;
  }
  mc_ctx_leave(&scope);
  if (res != 0) return MC_FAIL(kind == MC_OBJ_STREAM ? "cuStreamCreate" : "cuEventCreate", res);
  if (kind == MC_OBJ_STREAM) MC_STAT_INC(driver_stream_creates);
  else MC_STAT_INC(driver_event_creates);
  pthread_mutex_lock(&g_pool.lock);
  g_pool.devs[device].nobjs[kind - 1]++;
  pthread_mutex_unlock(&g_pool.lock);
  return MC_OK;
}

/* A pooled driver object of `kind` on `device` (lock held): an idle one, polling a few draining
 * ones if none is idle; at the stream cap, any draining one found idle or the driver stream of an
 * idle live handle other than `self` (reclaim_locked). NULL if none. */
static void *take_pooled_locked(mc_obj_kind kind, int device, obj_rec *self) {
  dev_pool *p = &g_pool.devs[device];
  /* Driver handles: the synchronisations prove given-back objects idle (d_sync_poll). While at
   * most SPARE_DRAIN objects drain, a take makes a new object rather than query on the caller's
   * sequence: a create / launch / synchronise / destroy loop then alternates between two objects,
   * and the query of the one given back runs while the next synchronisation waits for the device
   * anyway. The objects of a kind on a device stay at most those live at once + SPARE_DRAIN + 1.
   * Only after the device's first MGPU_CACHED_POOL_SPARE_AFTER takes of the kind: a program that
   * makes a few streams (a first call, a kernel run twice) gets the one given back, polled, as
   * stock's cuStreamCreate after cuStreamDestroy gets the driver's recycled one, instead of
   * paying for a driver stream beside it that only a loop pays back (by the 33rd take a
   * create / destroy pair has saved stock's ~8 us 32 times over, more than the new stream costs). */
  int early = p->takes[kind - 1] < (size_t)mc_config()->pool_spare_after;
  if (early) p->takes[kind - 1]++;
  size_t checks =
      direct_mode() && !early && p->draining[kind - 1].n <= SPARE_DRAIN ? 0 : DRAIN_CHECKS;
  void *obj = take_idle_locked(p, kind, checks);
  if (!obj) {
    /* the stream cap (tagged handles only), else POLL_ALL_ABOVE: driver objects stay bounded
     * by the work really pending, as with stock's create/destroy */
    size_t cap = kind == MC_OBJ_STREAM && !direct_mode() ? mc_config()->stream_cap : 0;
    if (p->nobjs[kind - 1] >= (cap ? cap : POLL_ALL_ABOVE))
      obj = take_idle_locked(p, kind, p->draining[kind - 1].n);
    if (!obj && cap && p->nobjs[kind - 1] >= cap) {
      obj = reclaim_locked(p, self);
      if (!obj) MC_STAT_INC(stream_cap_exceeded);
    }
  }
  if (obj) {
    if (kind == MC_OBJ_STREAM) MC_STAT_INC(stream_pool_hits);
    else MC_STAT_INC(event_pool_hits);
  }
  return obj;
}

/* A driver object of `kind` for `device`: pooled if one is idle, else new. */
static mc_status acquire_object(mc_obj_kind kind, int device, obj_rec *self, void **out) {
  pthread_mutex_lock(&g_pool.lock);
  *out = take_pooled_locked(kind, device, self);
  pthread_mutex_unlock(&g_pool.lock);
  return *out ? MC_OK : make_driver_object(kind, device, out);
}

static void d_each_live_stream_locked(int device, void (*fn)(CUstream, void *), void *ctx);

void mc_pool_for_each_stream(int device, void (*fn)(CUstream stream, void *ctx), void *ctx) {
  if (device < 0 || device >= MC_MAX_DEVICES) return;
  pthread_mutex_lock(&g_pool.lock);
  dev_pool *p = &g_pool.devs[device];
  if (direct_mode()) d_each_live_stream_locked(device, fn, ctx); /* handed out to the program */
  for (size_t i = 0; i < p->nbound; ++i) {
    obj_rec *r = slot_rec(p->bound[i]);
    void *d = r ? __atomic_load_n(&r->bound, __ATOMIC_ACQUIRE) : NULL;
    if (d) fn((CUstream)d, ctx);
  }
  for (size_t i = 0; i < p->draining[MC_OBJ_STREAM - 1].n; ++i)
    fn((CUstream)p->draining[MC_OBJ_STREAM - 1].items[i], ctx);
  pthread_mutex_unlock(&g_pool.lock);
}

/* ---- slots ---- */

/* A free slot's record (lock held); NULL if the table is full or memory ran out. */
static obj_rec *slot_alloc_locked(uint32_t *slot) {
  if (g_pool.free_head) {
    *slot = g_pool.free_head - 1;
    obj_rec *r = slot_rec(*slot);
    g_pool.free_head = r->next_free;
    r->next_free = 0;
    return r;
  }
  uint32_t s = g_pool.nslots;
  if ((s >> CHUNK_BITS) >= MAX_CHUNKS) return NULL;
  if (!g_pool.chunks[s >> CHUNK_BITS]) {
    obj_rec *c = aligned_alloc(64, CHUNK * sizeof *c);
    if (!c) return NULL;
    memset(c, 0, CHUNK * sizeof *c);
    for (uint32_t i = 0; i < CHUNK; ++i) {
      c[i].word = (uint64_t)g_pool.gen_base << 32;
      c[i].slot = ((s >> CHUNK_BITS) << CHUNK_BITS) | i;
    }
    __atomic_store_n(&g_pool.chunks[s >> CHUNK_BITS], c, __ATOMIC_RELEASE);
  }
  g_pool.nslots++;
  *slot = s;
  return slot_rec(s);
}

/* The last step of a destroy: users are zero and DYING is set, so nobody else touches the
 * record. Its driver object goes back to the pool; the slot is freed with the next generation. */
static void finish_destroy(obj_rec *r) {
  uint32_t slot = r->slot;
  pthread_mutex_lock(&g_pool.lock);
  mc_obj_kind kind = (mc_obj_kind)r->kind;
  void *obj = __atomic_load_n(&r->bound, __ATOMIC_ACQUIRE);
  __atomic_store_n(&r->bound, NULL, __ATOMIC_RELEASE);
  if (kind == MC_OBJ_STREAM && r->device >= 0 && r->device < MC_MAX_DEVICES)
    bound_remove(&g_pool.devs[r->device], r);
  /* a stream made and destroyed with no use between: its driver stream is as idle as when it was
   * bound (mgpuStreamCreate + mgpuStreamDestroy without a query, ~1.8 us saved on the H100) */
  int unused = kind == MC_OBJ_STREAM && !__atomic_load_n(&r->pinned, __ATOMIC_ACQUIRE) &&
               __atomic_load_n(&r->seq, __ATOMIC_SEQ_CST) == r->idle_seq;
  give_back_locked(kind, r->device, obj, unused);
  __atomic_store_n(&r->pinned, 0, __ATOMIC_RELEASE);
  uint64_t w = __atomic_load_n(&r->word, __ATOMIC_ACQUIRE);
  uint32_t gen = (W_GEN(w) + 1) & GEN_MASK;
  __atomic_store_n(&r->word, (uint64_t)gen << 32, __ATOMIC_RELEASE);
  r->next_free = g_pool.free_head;
  g_pool.free_head = slot + 1;
  if (kind == MC_OBJ_STREAM) MC_STAT_DEC(live_streams);
  else MC_STAT_DEC(live_events);
  pthread_mutex_unlock(&g_pool.lock);
}

/* ---- create / destroy ---- */

static mc_status create_handle(mc_obj_kind kind, void **out) {
  *out = NULL;
  mc_status st = mc_runtime_init();
  if (MC_FAILED(st)) return st;
  int device = mc_thread_device();
  if (device < 0 || device >= mc_device_count() || device >= MC_MAX_DEVICES)
    return MC_FAIL("cuDeviceGet", MC_E_BAD_DEVICE);
  /* A new handle is bound at once (a pooled driver object, else a new one), so the driver call
   * that makes it, if any, is paid here, as the stock wrapper pays cuStreamCreate here, and not at
   * the first launch: threads that create their streams and then launch together measured 0.67x
   * the driver's launch throughput at 8 threads on the H100 with the bind at the first launch,
   * 0.97x with it here. A stream handle gives its driver stream back when it is provably idle
   * (mgpuStreamSynchronize, the stream cap) and binds again at its next use (stream_bound). */
  pthread_mutex_lock(&g_pool.lock); /* the common case, a pooled idle object: one lock hold */
  void *obj = take_pooled_locked(kind, device, NULL);
  if (!obj) { /* none: a new one, the pool's draining objects polled once, not again */
    pthread_mutex_unlock(&g_pool.lock);
    st = make_driver_object(kind, device, &obj);
    if (MC_FAILED(st)) return st;
    pthread_mutex_lock(&g_pool.lock);
  }
  uint32_t slot = 0;
  obj_rec *r = slot_alloc_locked(&slot);
  if (!r) {
    give_back_locked(kind, device, obj, 1);
    pthread_mutex_unlock(&g_pool.lock);
    return MC_FAIL(kind == MC_OBJ_STREAM ? "mgpuStreamCreate" : "mgpuEventCreate",
                   MC_E_NO_MEMORY);
  }
  r->kind = (uint8_t)kind;
  r->device = device;
  r->bpos = 0;
  __atomic_store_n(&r->pinned, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&r->bound, obj, __ATOMIC_RELEASE);
  r->idle_seq = __atomic_load_n(&r->seq, __ATOMIC_SEQ_CST); /* idle: pooled idle, or new */
  uint32_t gen = W_GEN(__atomic_load_n(&r->word, __ATOMIC_ACQUIRE));
  if (kind == MC_OBJ_STREAM) {
    bound_add(&g_pool.devs[device], r);
    MC_STAT_INC(stream_binds);
  }
  if (kind == MC_OBJ_STREAM) MC_STAT_INC(live_streams);
  else MC_STAT_INC(live_events);
  pthread_mutex_unlock(&g_pool.lock);
  *out = make_handle(kind == MC_OBJ_STREAM ? TAG_STREAM : TAG_EVENT, gen, slot);
  return MC_OK;
}

static mc_status d_create(mc_obj_kind kind, void **out);
static mc_status d_destroy(mc_obj_kind want, void *h, const char *call);

mc_status mc_stream_create(CUstream *out) {
  MC_STAT_INC(stream_creates);
  void *h = NULL;
  mc_status st = direct_mode() ? d_create(MC_OBJ_STREAM, &h) : create_handle(MC_OBJ_STREAM, &h);
  *out = (CUstream)h;
  return st;
}

mc_status mc_event_create(CUevent *out) {
  MC_STAT_INC(event_creates);
  void *h = NULL;
  mc_status st = direct_mode() ? d_create(MC_OBJ_EVENT, &h) : create_handle(MC_OBJ_EVENT, &h);
  *out = (CUevent)h;
  return st;
}

/* Mark a live record DYING; finish now if nobody uses it. -1 if stale. */
static int destroy_record(obj_rec *r, uint32_t gen) {
  uint64_t w = 0;
  if (word_change(r, gen, 0, W_DYING, &w) != 0) return -1;
  if ((w & W_USERS) == 0) finish_destroy(r);
  return 0;
}

static mc_status destroy_handle(mc_obj_kind want, void *h, const char *call) {
  mc_status st = mc_driver_load();
  if (MC_FAILED(st)) return st;
  if (direct_mode()) return d_destroy(want, h, call);
  h_ref ref = classify(h);
  if (ref.c == H_FOREIGN) { /* not ours: the driver decides, as with the stock wrapper */
    CUresult res = want == MC_OBJ_STREAM ? mc_cu.cuStreamDestroy((CUstream)h)
                                         : mc_cu.cuEventDestroy((CUevent)h);
    return res ? MC_FAIL(call, res) : MC_OK;
  }
  if (ref.c == H_STALE || ref.kind != want || destroy_record(ref.rec, ref.gen) != 0)
    return MC_FAIL(call, MC_CUDA_ERROR_INVALID_HANDLE); /* what the driver says of a dead one */
  return MC_OK;
}

mc_status mc_stream_destroy(CUstream stream) {
  MC_STAT_INC(stream_destroys);
  return destroy_handle(MC_OBJ_STREAM, stream, "cuStreamDestroy(stream)");
}

static mc_status event_destroy(CUevent event) {
  MC_STAT_INC(event_destroys);
  return destroy_handle(MC_OBJ_EVENT, event, "cuEventDestroy(event)");
}

/* ---- stream uses ---- */

/* The driver stream of a stream record in use, binding one if it has none. */
static mc_status stream_bound(obj_rec *r, CUstream *out) {
  void *d = __atomic_load_n(&r->bound, __ATOMIC_ACQUIRE);
  if (d) {
    *out = (CUstream)d;
    return MC_OK;
  }
  mc_status st = acquire_object(MC_OBJ_STREAM, r->device, r, &d);
  if (MC_FAILED(st)) return st;
  pthread_mutex_lock(&g_pool.lock);
  void *cur = __atomic_load_n(&r->bound, __ATOMIC_ACQUIRE);
  if (cur) { /* another use of this handle bound it first: keep theirs */
    give_back_locked(MC_OBJ_STREAM, r->device, d, 1);
    d = cur;
  } else {
    __atomic_store_n(&r->bound, d, __ATOMIC_RELEASE);
    r->idle_seq = UINT64_MAX; /* bound inside a use: work may follow */
    bound_add(&g_pool.devs[r->device], r);
    MC_STAT_INC(stream_binds);
  }
  pthread_mutex_unlock(&g_pool.lock);
  *out = (CUstream)d;
  return MC_OK;
}

static mc_status d_use_begin(CUstream handle, const char *call, mc_stream_use *use);

mc_status mc_stream_use_begin(CUstream handle, const char *call, mc_stream_use *use) {
  use->rec = NULL;
  use->pinned = 0;
  use->direct = 0;
  use->stream = handle;
  if (direct_mode()) return d_use_begin(handle, call, use);
  h_ref ref = classify(handle);
  if (ref.c == H_FOREIGN) {
    use->device = mc_thread_device();
    return MC_OK;
  }
  if (ref.c == H_STALE || ref.kind != MC_OBJ_STREAM || use_begin(ref.rec, ref.gen) != 0)
    return MC_FAIL(call, MC_CUDA_ERROR_INVALID_HANDLE);
  use->device = ref.rec->device;
  CUstream d = NULL;
  mc_status st = stream_bound(ref.rec, &d);
  if (MC_FAILED(st)) {
    use_end(ref.rec);
    return st;
  }
  use->rec = ref.rec;
  use->stream = d;
  use->pinned = __atomic_load_n(&ref.rec->pinned, __ATOMIC_ACQUIRE);
  return MC_OK;
}

void mc_stream_use_end_ours(mc_stream_use *use) { use_end((obj_rec *)use->rec); }

typedef struct drv_obj drv_obj;
static drv_obj *d_find(const void *h);
static int d_device(const drv_obj *r);

int mc_handle_device(const void *handle) {
  if (direct_mode()) {
    drv_obj *r = d_find(handle);
    return r ? d_device(r) : mc_thread_device();
  }
  h_ref ref = classify(handle);
  if (ref.c == H_OURS) {
    int d = ref.rec->device;
    if (d >= 0) return d;
  }
  return mc_thread_device();
}

/* Synchronise one of our stream records (a use held by the caller: `w1` is the word its
 * use_begin produced, `s1` the seq right after it). Unbinds it if provably idle afterwards. */
static mc_status sync_ours(obj_rec *r, uint64_t w1, uint64_t s1) {
  void *d = __atomic_load_n(&r->bound, __ATOMIC_ACQUIRE);
  if (!d) { /* nothing was ever enqueued since the last unbind: nothing to wait for */
    use_end(r);
    return MC_OK;
  }
  CUresult res = mc_cu.cuStreamSynchronize((CUstream)d);
  if (res == 0 && (w1 & W_USERS) == 1 && !__atomic_load_n(&r->pinned, __ATOMIC_ACQUIRE)) {
    uint64_t expect = w1;
    /* Turn our use into LOCK, only if no other use began or is running. */
    if (__atomic_compare_exchange_n(&r->word, &expect, (w1 - 1) | W_LOCK, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
      if (__atomic_load_n(&r->seq, __ATOMIC_SEQ_CST) == s1) {
        int query = mc_config()->stream_query;
        pthread_mutex_lock(&g_pool.lock);
        __atomic_store_n(&r->bound, NULL, __ATOMIC_RELEASE);
        bound_remove(&g_pool.devs[r->device], r);
        give_back_locked(MC_OBJ_STREAM, r->device, d, !query);
        pthread_mutex_unlock(&g_pool.lock);
        if (!query) MC_STAT_INC(stream_query_skips);
      }
      unlock_record(r);
      return MC_OK;
    }
  }
  use_end(r);
  return res ? MC_FAIL("cuStreamSynchronize(stream)", res) : MC_OK;
}

static mc_status d_stream_synchronize(CUstream stream);

mc_status mc_stream_synchronize(CUstream stream) {
  mc_status st = mc_driver_load();
  if (MC_FAILED(st)) return st;
  if (direct_mode()) return d_stream_synchronize(stream);
  h_ref ref = classify(stream);
  if (ref.c == H_OURS && ref.kind == MC_OBJ_STREAM) {
    uint64_t w1 = 0, s1 = 0;
    if (use_begin_at(ref.rec, ref.gen, &w1, &s1) == 0) return sync_ours(ref.rec, w1, s1);
    ref.c = H_STALE;
  }
  if (ref.c != H_FOREIGN)
    return MC_FAIL("cuStreamSynchronize(stream)", MC_CUDA_ERROR_INVALID_HANDLE);
  if (stream) {
    MC_CU_TRY("cuStreamSynchronize(stream)", mc_cu.cuStreamSynchronize(stream));
    return MC_OK;
  }
  mc_ctx_scope scope;
  st = mc_ctx_enter(mc_thread_device(), &scope);
  if (MC_FAILED(st)) return st;
  CUresult res = mc_cu.cuStreamSynchronize(NULL);
  mc_ctx_leave(&scope);
  return res ? MC_FAIL("cuStreamSynchronize(stream)", res) : MC_OK;
}

/* ---- events ---- */

/* Begin a use of an event record whose driver event lives on `device` (moving it there if it
 * lives elsewhere or has none). Returns the driver event in *ev. -1 stale, -2 failure in *st. */
static int event_use_on(obj_rec *r, uint32_t gen, int device, CUevent *ev, mc_status *st) {
  for (;;) {
    if (use_begin(r, gen) != 0) return -1;
    void *e = __atomic_load_n(&r->bound, __ATOMIC_ACQUIRE);
    if (e && (device < 0 || r->device == device || __atomic_load_n(&r->pinned, __ATOMIC_ACQUIRE))) {
      *ev = (CUevent)e;
      return 0;
    }
    use_end(r);
    /* Move: take LOCK (no users), swap the driver event for one of `device`. */
    if (lock_record(r, gen) != 0) return -1;
    void *cur = __atomic_load_n(&r->bound, __ATOMIC_ACQUIRE);
    int dev = device < 0 ? r->device : device;
    if (!cur || r->device != dev) {
      void *ne = NULL;
      *st = acquire_object(MC_OBJ_EVENT, dev, NULL, &ne);
      if (MC_FAILED(*st)) {
        unlock_record(r);
        return -2;
      }
      pthread_mutex_lock(&g_pool.lock);
      give_back_locked(MC_OBJ_EVENT, r->device, cur, 0);
      __atomic_store_n(&r->bound, ne, __ATOMIC_RELEASE);
      r->device = dev;
      pthread_mutex_unlock(&g_pool.lock);
    }
    unlock_record(r);
  }
}

static mc_status d_event_record(CUevent event, CUstream stream, const char *call);

mc_status mc_event_record(CUevent event, CUstream stream) {
  static const char *const call = "cuEventRecord(event, stream)";
  mc_status st = mc_driver_load();
  if (MC_FAILED(st)) return st;
  if (direct_mode()) return d_event_record(event, stream, call);
  h_ref eref = classify(event);
  if (eref.c == H_STALE || (eref.c == H_OURS && eref.kind != MC_OBJ_EVENT))
    return MC_FAIL(call, MC_CUDA_ERROR_INVALID_HANDLE);
  mc_stream_use use;
  st = mc_stream_use_begin(stream, call, &use);
  if (MC_FAILED(st)) return st;
  CUevent ev = (CUevent)event;
  int ours = eref.c == H_OURS;
  if (ours) {
    /* Foreign streams: we do not know their device; keep the event where it is. */
    int dev = use.rec ? use.device : -1;
    int rc = event_use_on(eref.rec, eref.gen, dev, &ev, &st);
    if (rc != 0) {
      mc_stream_use_end(&use);
      return rc == -1 ? MC_FAIL(call, MC_CUDA_ERROR_INVALID_HANDLE) : st;
    }
  }
  CUresult res = mc_cu.cuEventRecord(ev, use.stream);
  if (ours) use_end(eref.rec);
  mc_stream_use_end(&use);
  return res ? MC_FAIL(call, res) : MC_OK;
}

static mc_status d_stream_wait_event(CUstream stream, CUevent event, const char *call);

mc_status mc_stream_wait_event(CUstream stream, CUevent event) {
  static const char *const call = "cuStreamWaitEvent(stream, event, /*flags=*/0)";
  mc_status st = mc_driver_load();
  if (MC_FAILED(st)) return st;
  if (direct_mode()) return d_stream_wait_event(stream, event, call);
  h_ref eref = classify(event);
  if (eref.c == H_STALE) return MC_FAIL(call, MC_CUDA_ERROR_INVALID_HANDLE);
  mc_stream_use use;
  st = mc_stream_use_begin(stream, call, &use);
  if (MC_FAILED(st)) return st;
  CUresult res = 0;
  if (eref.c == H_FOREIGN) {
    res = mc_cu.cuStreamWaitEvent(use.stream, event, 0);
  } else if (eref.kind == MC_OBJ_EVENT) {
    if (use_begin(eref.rec, eref.gen) != 0) {
      st = MC_FAIL(call, MC_CUDA_ERROR_INVALID_HANDLE);
    } else {
      void *e = __atomic_load_n(&eref.rec->bound, __ATOMIC_ACQUIRE);
      if (e) res = mc_cu.cuStreamWaitEvent(use.stream, (CUevent)e, 0);
      use_end(eref.rec);
    }
  } else { /* a stream handle passed as the event: wait for that stream's work so far */
    mc_stream_use other;
    st = mc_stream_use_begin((CUstream)event, call, &other);
    if (!MC_FAILED(st)) {
      void *tmp = NULL;
      st = acquire_object(MC_OBJ_EVENT, other.device, NULL, &tmp);
      if (!MC_FAILED(st)) {
        res = mc_cu.cuEventRecord((CUevent)tmp, other.stream);
        if (res == 0) res = mc_cu.cuStreamWaitEvent(use.stream, (CUevent)tmp, 0);
        pthread_mutex_lock(&g_pool.lock);
        give_back_locked(MC_OBJ_EVENT, other.device, tmp, 0);
        pthread_mutex_unlock(&g_pool.lock);
      }
      mc_stream_use_end(&other);
    }
  }
  mc_stream_use_end(&use);
  if (MC_FAILED(st)) return st;
  return res ? MC_FAIL(call, res) : MC_OK;
}

static mc_status d_event_synchronize(CUevent event, const char *call);

mc_status mc_event_synchronize(CUevent event) {
  static const char *const call = "cuEventSynchronize(event)";
  mc_status st = mc_driver_load();
  if (MC_FAILED(st)) return st;
  if (direct_mode()) return d_event_synchronize(event, call);
  h_ref ref = classify(event);
  if (ref.c == H_FOREIGN) {
    MC_CU_TRY(call, mc_cu.cuEventSynchronize(event));
    return MC_OK;
  }
  if (ref.c == H_OURS && ref.kind == MC_OBJ_STREAM) return mc_stream_synchronize((CUstream)event);
  if (ref.c == H_STALE || use_begin(ref.rec, ref.gen) != 0)
    return MC_FAIL(call, MC_CUDA_ERROR_INVALID_HANDLE);
  void *e = __atomic_load_n(&ref.rec->bound, __ATOMIC_ACQUIRE);
  CUresult res = e ? mc_cu.cuEventSynchronize((CUevent)e) : 0;
  use_end(ref.rec);
  return res ? MC_FAIL(call, res) : MC_OK;
}

mc_status mc_event_destroy_any(CUevent event) {
  if (mc_pool_live_kind(event) == MC_OBJ_STREAM) return mc_stream_destroy((CUstream)event);
  return event_destroy(event);
}

static mc_obj_kind d_live_kind(const void *handle, int *busy);

mc_obj_kind mc_pool_live_kind_busy(const void *handle, int *busy) {
  if (busy) *busy = 0;
  if (direct_mode()) return d_live_kind(handle, busy);
  h_ref ref = classify(handle);
  return ref.c == H_OURS ? ref.kind : MC_OBJ_NONE;
}

mc_obj_kind mc_pool_live_kind(const void *handle) { return mc_pool_live_kind_busy(handle, NULL); }

void *mc_pool_driver_handle(void *handle) {
  if (direct_mode()) { /* a handle of ours is its driver object; a destroyed one has none */
    drv_obj *r = d_find(handle);
    return !r || d_live_kind(handle, NULL) != MC_OBJ_NONE ? handle : NULL;
  }
  h_ref ref = classify(handle);
  if (ref.c != H_OURS) return handle;
  if (use_begin(ref.rec, ref.gen) != 0) return NULL;
  __atomic_store_n(&ref.rec->pinned, 1, __ATOMIC_RELEASE); /* before binding: never reclaimed */
  void *d = __atomic_load_n(&ref.rec->bound, __ATOMIC_ACQUIRE);
  if (!d && ref.kind == MC_OBJ_STREAM) {
    CUstream s = NULL;
    if (!MC_FAILED(stream_bound(ref.rec, &s))) d = s;
  }
  use_end(ref.rec);
  return d;
}

/* ---- driver handles (the default; MGPU_CACHED_STREAM_HANDLES=driver) ----
 *
 * A handle is the driver object itself. Each driver object the library made has a drv_obj,
 * found through handle_map.h (lock-free); records are never freed (nor their driver objects).
 * `live` is 1 from mgpuStreamCreate / mgpuEventCreate to the destroy, 0 while the object is
 * pooled: a destroyed handle is then reported as the driver reports a dead one
 * (CUDA_ERROR_INVALID_HANDLE) until the object is handed out again. Nothing else is tracked per
 * use: the program holds the driver object and may use it with the driver behind the library's
 * back (enqueue, query, capture), so no call of the library counts uses, none waits for another
 * thread's use, and nothing is ever unbound from a handle. */
struct drv_obj {
  void *obj;      /* the driver CUstream / CUevent; immutable */
  int32_t device; /* device whose context made it; fixed while live (rewritten under g_pool.lock
                     only when a context reset let the driver reuse the value: d_create) */
  uint8_t kind;   /* mc_obj_kind; same rule as device */
  uint32_t live;  /* atomic: 1 while handed out, 0 while pooled (or never handed out) */
  uint32_t parks; /* times put on the draining list (park_locked: the program's destroy, or the
                     library's own use of a pooled object); under g_pool.lock (matches a proof
                     made outside the lock to the park it covers: mc_pool_parked_idle) */
  uint32_t used;  /* atomic (relaxed): streams: work went through the library onto it since the
                     library last synchronised it (d_use_begin sets, d_stream_synchronize and
                     d_create clear); a hint only: mc_pool_live_kind_busy */
};

static void count_park_locked(drv_obj *r, void *obj) {
  if (!direct_mode()) return;
  if (!r) r = d_find(obj);
  if (r) r->parks++;
}

/* The object this thread's mgpu*Destroy gave back last, while the thread has made no other pool
 * call since (d_sync_poll leaves it alone: see there); NULL otherwise. */
static _Thread_local void *tl_just_parked;

typedef struct each_ctx {
  int device;
  void (*fn)(CUstream, void *);
  void *ctx;
} each_ctx;

static void each_live(const void *key, void *rec, void *c) {
  drv_obj *r = rec;
  each_ctx *e = c;
  if (r->kind == MC_OBJ_STREAM && r->device == e->device &&
      __atomic_load_n(&r->live, __ATOMIC_ACQUIRE))
    e->fn((CUstream)key, e->ctx);
}

/* Every driver stream of `device` handed out to the program now (driver handles). Lock held. */
static void d_each_live_stream_locked(int device, void (*fn)(CUstream, void *), void *ctx) {
  each_ctx e = {device, fn, ctx};
  mc_hmap_for_each(each_live, &e);
}

static drv_obj *d_find(const void *h) {
  if ((uintptr_t)h <= 2) return NULL; /* NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD */
  return mc_hmap_find(h);
}

static int d_device(const drv_obj *r) { return r->device; }

static int d_live(const drv_obj *r) { return __atomic_load_n(&r->live, __ATOMIC_ACQUIRE) != 0; }

/* The kind of a live driver object of ours, else MC_OBJ_NONE; *busy (when asked): its `used`. */
static mc_obj_kind d_live_kind(const void *handle, int *busy) {
  drv_obj *r = d_find(handle);
  if (!r || !d_live(r)) return MC_OBJ_NONE;
  if (busy && r->kind == MC_OBJ_STREAM) *busy = __atomic_load_n(&r->used, __ATOMIC_RELAXED) != 0;
  return (mc_obj_kind)r->kind;
}

static mc_status d_create(mc_obj_kind kind, void **out) {
  *out = NULL;
  tl_just_parked = NULL;
  mc_status st = mc_runtime_init();
  if (MC_FAILED(st)) return st;
  int device = mc_thread_device();
  if (device < 0 || device >= mc_device_count() || device >= MC_MAX_DEVICES)
    return MC_FAIL("cuDeviceGet", MC_E_BAD_DEVICE);
  void *obj = NULL;
  st = acquire_object(kind, device, NULL, &obj); /* an idle pooled one, else cuStreamCreate /
                                                    cuEventCreate, as stock calls here */
  if (MC_FAILED(st)) return st;
  drv_obj *r = mc_hmap_find(obj);
  if (r && (r->kind != (uint8_t)kind || r->device != device)) {
    /* The driver gave a dead object's value to a new one (after a context reset: context.h):
     * the record describes the new object from now on, as the value now names it. */
    pthread_mutex_lock(&g_pool.lock);
    r->kind = (uint8_t)kind;
    r->device = device;
    pthread_mutex_unlock(&g_pool.lock);
  }
  if (!r && (r = calloc(1, sizeof *r)) != NULL) {
    r->obj = obj;
    r->device = device;
    r->kind = (uint8_t)kind;
    pthread_mutex_lock(&g_pool.lock);
    if (mc_hmap_insert(obj, r) != 0) {
      free(r);
      r = NULL;
    }
    pthread_mutex_unlock(&g_pool.lock);
  }
  /* without a record (no memory) the object is the program's alone: foreign to the library,
   * destroyed by the driver at mgpu*Destroy, as stock's */
  if (r) {
    __atomic_store_n(&r->used, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&r->live, 1, __ATOMIC_RELEASE);
  }
  if (kind == MC_OBJ_STREAM) MC_STAT_INC(live_streams);
  else MC_STAT_INC(live_events);
  *out = obj;
  return MC_OK;
}

static mc_status d_destroy(mc_obj_kind want, void *h, const char *call) {
  drv_obj *r = d_find(h);
  if (!r) { /* not ours: the driver decides, as with the stock wrapper */
    CUresult res = want == MC_OBJ_STREAM ? mc_cu.cuStreamDestroy((CUstream)h)
                                         : mc_cu.cuEventDestroy((CUevent)h);
    return res ? MC_FAIL(call, res) : MC_OK;
  }
  uint32_t one = 1;
  if (r->kind != want ||
      !__atomic_compare_exchange_n(&r->live, &one, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return MC_FAIL(call, MC_CUDA_ERROR_INVALID_HANDLE); /* what the driver says of a dead one */
  /* Back to the pool, draining, without a driver call: the program may have enqueued on it
   * directly since the library last saw it (a direct handle), so it is reused only once a later
   * poll (d_sync_poll, or a take's) finds its work complete. */
  pthread_mutex_lock(&g_pool.lock);
  park_locked(want, r->device, h, r); /* r in hand: no second lookup */
  pthread_mutex_unlock(&g_pool.lock);
  tl_just_parked = h;
  if (want == MC_OBJ_STREAM) MC_STAT_DEC(live_streams);
  else MC_STAT_DEC(live_events);
  return MC_OK;
}

int mc_pool_stock_destroy(mc_obj_kind want, void *h, CUresult *result) {
  if (!direct_mode()) return 0;
  drv_obj *r = d_find(h);
  if (!r || r->kind != want || !d_live(r)) return 0;
  CUresult res = want == MC_OBJ_STREAM ? mc_cu.cuStreamDestroy((CUstream)h)
                                       : mc_cu.cuEventDestroy((CUevent)h);
  *result = res;
  if (res != 0) { /* still the driver's object: pooled as any destroyed one */
    (void)d_destroy(want, h, "");
    return 1;
  }
  uint32_t one = 1; /* destroyed by the driver: never pooled, the record forgets it */
  if (__atomic_compare_exchange_n(&r->live, &one, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    if (want == MC_OBJ_STREAM) MC_STAT_DEC(live_streams);
    else MC_STAT_DEC(live_events);
  }
  return 1;
}

static mc_status d_use_begin(CUstream handle, const char *call, mc_stream_use *use) {
  tl_just_parked = NULL;
  drv_obj *r = d_find(handle);
  if (!r) {
    use->device = mc_thread_device();
    return MC_OK;
  }
  if (r->kind != MC_OBJ_STREAM || !d_live(r)) return MC_FAIL(call, MC_CUDA_ERROR_INVALID_HANDLE);
  if (!__atomic_load_n(&r->used, __ATOMIC_RELAXED)) /* no store while set: the line stays shared */
    __atomic_store_n(&r->used, 1, __ATOMIC_RELAXED);
  use->rec = r;
  use->direct = 1;
  use->device = r->device;
  return MC_OK;
}

/* Driver handles: before a synchronisation blocks, poll up to SYNC_POLLS given-back objects of
 * `device` (streams first), moving those complete to the idle list, so that the next create takes
 * one without a driver call. mgpu*Destroy parks objects without a query (d_destroy); the queries
 * run here instead, where the thread is about to wait for the device: while the work waited for
 * outlasts them they cost the program no time. Only the driver's answer makes an object idle.
 * The context is checked first (context.h: one cuCtxGetId, in the same wait): after a reset the
 * recovery forgets the parked objects, so none of a dead context is queried. One relaxed-mode
 * bracket (capture.h) for the polls; nothing at all when nothing drains. The object the calling
 * thread gave back just before (tl_just_parked: no other pool call since) is left to a later poll:
 * a thread that destroys a stream and synchronises another at once most often has nothing left
 * to wait for, so the query would delay it (MGPU_CACHED_POOL_POLL_FRESH=1 polls it too). */
static void d_sync_poll(int device) {
  void **parked = MC_TLS_ADDR(tl_just_parked);
  void *skip = mc_config()->pool_poll_fresh ? NULL : *parked;
  *parked = NULL;
  if (device < 0 || device >= MC_MAX_DEVICES) return;
  dev_pool *p = &g_pool.devs[device];
  size_t ndrain = __atomic_load_n(&p->ndrain, __ATOMIC_RELAXED);
  if (!ndrain || (ndrain == 1 && skip)) return; /* nothing to poll (the one just given back) */
  mc_ctx_verify(device); /* no lock held */
  mc_relaxed rx;
  mc_relaxed_enter(&rx);
  pthread_mutex_lock(&g_pool.lock);
  size_t ns = drain_poll_locked(p, MC_OBJ_STREAM, SYNC_POLLS, 0, 1, skip);
  drain_poll_locked(p, MC_OBJ_EVENT, SYNC_POLLS - ns, 0, 1, skip);
  pthread_mutex_unlock(&g_pool.lock);
  mc_relaxed_leave(&rx);
}

size_t mc_pool_parked_streams(int device, void **objs, uint32_t *parks, size_t max) {
  if (!direct_mode() || device < 0 || device >= MC_MAX_DEVICES) return 0;
  dev_pool *p = &g_pool.devs[device];
  if (!__atomic_load_n(&p->ndrain, __ATOMIC_RELAXED)) return 0;
  size_t n = 0;
  pthread_mutex_lock(&g_pool.lock);
  obj_list *dr = &p->draining[MC_OBJ_STREAM - 1];
  for (size_t i = 0; i < dr->n && n < max; ++i) {
    drv_obj *r = mc_hmap_find(dr->items[i]);
    if (!r) continue;
    objs[n] = dr->items[i];
    parks[n++] = r->parks;
  }
  pthread_mutex_unlock(&g_pool.lock);
  return n;
}

void mc_pool_parked_idle(int device, void *const *objs, const uint32_t *parks, size_t n) {
  if (!n || !direct_mode() || device < 0 || device >= MC_MAX_DEVICES) return;
  dev_pool *p = &g_pool.devs[device];
  obj_list *dr = &p->draining[MC_OBJ_STREAM - 1];
  pthread_mutex_lock(&g_pool.lock);
  for (size_t i = 0; i < n; ++i) {
    drv_obj *r = mc_hmap_find(objs[i]);
    if (!r || r->parks != parks[i] || __atomic_load_n(&r->live, __ATOMIC_ACQUIRE)) continue;
    for (size_t j = 0; j < dr->n; ++j) {
      if (dr->items[j] != objs[i]) continue;
      drain_to_idle_locked(p, MC_OBJ_STREAM, j);
      MC_STAT_INC(stream_fence_proofs);
      break;
    }
  }
  drain_hint_locked(p);
  pthread_mutex_unlock(&g_pool.lock);
}

static mc_status d_stream_synchronize(CUstream stream) {
  static const char *const call = "cuStreamSynchronize(stream)";
  drv_obj *r = d_find(stream);
  if (r && (r->kind != MC_OBJ_STREAM || !d_live(r)))
    return MC_FAIL(call, MC_CUDA_ERROR_INVALID_HANDLE);
  d_sync_poll(r ? r->device : mc_thread_device());
  if (stream) { /* a driver stream, ours or not: nothing is pooled here (R27 cannot arise) */
    MC_CU_TRY(call, mc_cu.cuStreamSynchronize(stream));
    if (r && __atomic_load_n(&r->used, __ATOMIC_RELAXED)) /* as d_use_begin: no store if clear */
      __atomic_store_n(&r->used, 0, __ATOMIC_RELAXED);
    return MC_OK;
  }
  mc_ctx_scope scope;
  mc_status st = mc_ctx_enter(mc_thread_device(), &scope);
  if (MC_FAILED(st)) return st;
  CUresult res = mc_cu.cuStreamSynchronize(NULL);
  mc_ctx_leave(&scope);
  return res ? MC_FAIL(call, res) : MC_OK;
}

/* Record `ev` (of device `evdev`) after the work so far of `stream` (a stream of another device,
 * `sdev`): a pooled event of `sdev` is recorded on `stream`, a pooled stream of `evdev` waits
 * for it (cuStreamWaitEvent takes an event of another device) and `ev` is recorded there. Both
 * helpers go back to the pool at once and are reused only once the driver reports them complete. */
static CUresult d_record_across(CUevent ev, int evdev, CUstream stream, int sdev, mc_status *st) {
  void *tmp = NULL, *hs = NULL;
  *st = acquire_object(MC_OBJ_EVENT, sdev, NULL, &tmp);
  if (!MC_FAILED(*st)) *st = acquire_object(MC_OBJ_STREAM, evdev, NULL, &hs);
  CUresult res = 0;
  if (!MC_FAILED(*st)) {
    res = mc_cu.cuEventRecord((CUevent)tmp, stream);
    if (res == 0) res = mc_cu.cuStreamWaitEvent((CUstream)hs, (CUevent)tmp, 0);
    if (res == 0) res = mc_cu.cuEventRecord(ev, (CUstream)hs);
  }
  pthread_mutex_lock(&g_pool.lock); /* just enqueued on: draining, no query */
  park_locked(MC_OBJ_EVENT, sdev, tmp, NULL);
  park_locked(MC_OBJ_STREAM, evdev, hs, NULL);
  pthread_mutex_unlock(&g_pool.lock);
  return res;
}

static mc_status d_event_record(CUevent event, CUstream stream, const char *call) {
  drv_obj *e = d_find(event);
  if (e && (e->kind != MC_OBJ_EVENT || !d_live(e)))
    return MC_FAIL(call, MC_CUDA_ERROR_INVALID_HANDLE);
  mc_stream_use use;
  mc_status st = mc_stream_use_begin(stream, call, &use);
  if (MC_FAILED(st)) return st;
  CUresult res;
  /* An event of ours recorded on a stream of ours of another device: the stock wrapper has one
   * context for everything; here objects stay on the device they were made on. No wait, no
   * lock held across a driver call: another thread blocked on the event never delays this (R26). */
  if (e && use.rec && use.device != e->device)
    res = d_record_across(event, e->device, use.stream, use.device, &st);
  else
    res = mc_cu.cuEventRecord(event, use.stream);
  mc_stream_use_end(&use);
  if (MC_FAILED(st)) return st;
  return res ? MC_FAIL(call, res) : MC_OK;
}

static mc_status d_stream_wait_event(CUstream stream, CUevent event, const char *call) {
  drv_obj *e = d_find(event);
  if (e && !d_live(e)) return MC_FAIL(call, MC_CUDA_ERROR_INVALID_HANDLE);
  mc_stream_use use;
  mc_status st = mc_stream_use_begin(stream, call, &use);
  if (MC_FAILED(st)) return st;
  CUresult res = 0;
  if (!e || e->kind == MC_OBJ_EVENT) {
    res = mc_cu.cuStreamWaitEvent(use.stream, event, 0);
  } else { /* a stream of ours passed as the event: wait for that stream's work so far */
    void *tmp = NULL;
    st = acquire_object(MC_OBJ_EVENT, e->device, NULL, &tmp);
    if (!MC_FAILED(st)) {
      res = mc_cu.cuEventRecord((CUevent)tmp, (CUstream)event);
      if (res == 0) res = mc_cu.cuStreamWaitEvent(use.stream, (CUevent)tmp, 0);
      pthread_mutex_lock(&g_pool.lock); /* just recorded: draining, no query */
      park_locked(MC_OBJ_EVENT, e->device, tmp, NULL);
      pthread_mutex_unlock(&g_pool.lock);
    }
  }
  mc_stream_use_end(&use);
  if (MC_FAILED(st)) return st;
  return res ? MC_FAIL(call, res) : MC_OK;
}

static mc_status d_event_synchronize(CUevent event, const char *call) {
  drv_obj *e = d_find(event);
  if (e && e->kind == MC_OBJ_STREAM && d_live(e)) return d_stream_synchronize((CUstream)event);
  if (e && !d_live(e)) return MC_FAIL(call, MC_CUDA_ERROR_INVALID_HANDLE);
  d_sync_poll(e ? e->device : mc_thread_device());
  /* no use held, nothing locked: a record of this event by another thread never waits (R26) */
  MC_CU_TRY(call, mc_cu.cuEventSynchronize(event));
  return MC_OK;
}

/* ---- fork ---- */

void mc_pool_fork_prepare(void) { pthread_mutex_lock(&g_pool.lock); }
void mc_pool_fork_parent(void) { pthread_mutex_unlock(&g_pool.lock); }
void mc_pool_fork_child(void) {
  /* The parent's records and driver objects are forgotten (their memory is leaked): handles from
   * the parent read as stale, and no driver object of the parent is ever used in the child. */
  for (uint32_t c = 0; c < MAX_CHUNKS; ++c) g_pool.chunks[c] = NULL;
  g_pool.nslots = 0;
  g_pool.free_head = 0;
  g_pool.gen_base = (g_pool.gen_base + 0x10000u) & GEN_MASK; /* parent handles never alias */
  if (!g_pool.gen_base) g_pool.gen_base = 1;
  memset(g_pool.devs, 0, sizeof g_pool.devs);
  mc_hmap_fork_child(); /* driver handles: every record of the parent forgotten */
  pthread_mutex_init(&g_pool.lock, NULL);
}

/* ---- faults (issue 19 item 5): a device's primary context was reset (context.h) ----
 * The device's pooled driver objects (idle and draining) are forgotten: never handed out, queried
 * or destroyed again (they belong to the dead context; leaked). Live handles of the device give
 * up their driver object where no use holds them now (LOCK tried, never waited for; pinned ones
 * keep theirs: the program has it), so their next use binds one of the new context; a handle in
 * use at this moment keeps its dead object, and its destroy pools it (a later use of that object
 * reports CONTEXT_IS_DESTROYED, nothing worse). */
/* A context reset: every driver object of `device` handed out to the program died with the
 * context; marked not live, so nothing of the library (the allocator's fence above all) hands a
 * dead object to the driver again (the H100 driver may crash on one). Lock held. */
static void forget_live(const void *key, void *rec, void *c) {
  (void)key;
  drv_obj *r = rec;
  if (r->device == *(const int *)c) __atomic_store_n(&r->live, 0, __ATOMIC_RELEASE);
}

void mc_pool_forget_device(int device) {
  if (device < 0 || device >= MC_MAX_DEVICES) return;
  pthread_mutex_lock(&g_pool.lock);
  mc_hmap_for_each(forget_live, &device);
  dev_pool *p = &g_pool.devs[device];
  for (int k = 0; k < 2; ++k) {
    stat_pooled((mc_obj_kind)(k + 1), -(int)(p->idle[k].n + p->draining[k].n));
    p->idle[k].n = 0;
    p->draining[k].n = 0;
  }
  drain_hint_locked(p);
  for (uint32_t slot = 0; slot < g_pool.nslots; ++slot) {
    obj_rec *r = slot_rec(slot);
    if (!r || r->kind == MC_OBJ_NONE || r->device != device ||
        __atomic_load_n(&r->pinned, __ATOMIC_ACQUIRE) || !__atomic_load_n(&r->bound, __ATOMIC_ACQUIRE) ||
        !try_lock_record(r))
      continue;
    __atomic_store_n(&r->bound, NULL, __ATOMIC_RELEASE);
    if (r->kind == MC_OBJ_STREAM) bound_remove(p, r);
    r->idle_seq = UINT64_MAX;
    unlock_record(r);
  }
  pthread_mutex_unlock(&g_pool.lock);
}
