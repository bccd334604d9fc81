/* pool.c - stream and event pools (see pool.h).
 *
 * Locking rule: g_pool.lock guards the registry (every object ever made, with its kind, device
 * and state) and every per-device idle and draining list. Driver calls that create objects run
 * outside the lock; cuStreamQuery / cuEventQuery run under it (they do not block).
 *
 * Known idle: a stream comes back into use only once its queued work has finished, which a
 * give-back checks with cuStreamQuery (about 1.5 us on the H100 VM: most of what a cached
 * synchronous launch costs over the driver floor). The generated code of a synchronous launch
 * destroys a stream right after synchronizing it, so the stream this library synchronized last
 * is remembered in g_synced (atomic, no lock) and given back without a query. It is set *before*
 * cuStreamSynchronize and cleared by mc_pool_note_launch *after* every launch through this
 * library (and after every mgpuStreamWaitEvent, since a wait can hold the stream behind work of
 * another stream), so a launch on that stream from any thread either precedes the
 * synchronization (which then covers it) or clears the mark. Copies and memsets enqueued after the
 * synchronization need no clearing: they depend only on work already submitted, so a stream
 * handed out behind them cannot deadlock. Work enqueued on our streams directly through the
 * driver (not through mgpu*) is not seen; only a kernel that waits for a later kernel could make
 * that matter. MGPU_CACHED_STREAM_QUERY=1 always queries.
 */
#include "pool.h"

#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "driver.h"
#include "stats.h"

#define MC_DRAIN_CHECKS 4 /* draining objects polled per create when none is idle */

typedef enum { ST_LIVE = 1, ST_IDLE = 2, ST_DRAINING = 3 } obj_state;

typedef struct obj_rec {
  const void *handle; /* CUstream or CUevent; NULL = empty slot */
  uint8_t kind;       /* mc_obj_kind */
  uint8_t state;      /* obj_state */
  int16_t device;     /* device ordinal it belongs to */
} obj_rec;

typedef struct obj_list {
  void **items; /* owned array */
  size_t n, cap;
} obj_list;

typedef struct dev_pool {
  obj_list idle;     /* ready for reuse (LIFO) */
  obj_list draining; /* given back while busy, oldest first */
} dev_pool;

static struct {
  pthread_mutex_t lock; /* see the locking rule above */
  obj_rec *recs;        /* open-addressing registry, never shrinks */
  size_t mask, count;
  dev_pool *pools[2];   /* [kind-1][device]; allocated on first use */
  int npools;
} g_pool = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, {NULL, NULL}, 0};

static size_t hash_ptr(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 31;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 29;
  return (size_t)x;
}

static obj_rec *rec_find(const void *h) {
  if (!g_pool.recs || !h) return NULL;
  for (size_t i = hash_ptr(h) & g_pool.mask;; i = (i + 1) & g_pool.mask) {
    if (g_pool.recs[i].handle == h) return &g_pool.recs[i];
    if (!g_pool.recs[i].handle) return NULL;
  }
}

static obj_rec *rec_insert(const void *h) {
  if ((g_pool.count + 1) * 2 > (g_pool.recs ? g_pool.mask + 1 : 0)) {
    size_t ncap = g_pool.recs ? (g_pool.mask + 1) * 2 : 256;
    obj_rec *n = calloc(ncap, sizeof *n);
    if (!n) return NULL;
    for (size_t i = 0; g_pool.recs && i <= g_pool.mask; ++i) {
      if (!g_pool.recs[i].handle) continue;
      size_t j = hash_ptr(g_pool.recs[i].handle) & (ncap - 1);
      while (n[j].handle) j = (j + 1) & (ncap - 1);
      n[j] = g_pool.recs[i];
    }
    free(g_pool.recs);
    g_pool.recs = n;
    g_pool.mask = ncap - 1;
  }
  size_t i = hash_ptr(h) & g_pool.mask;
  while (g_pool.recs[i].handle && g_pool.recs[i].handle != h) i = (i + 1) & g_pool.mask;
  if (!g_pool.recs[i].handle) g_pool.count++;
  g_pool.recs[i].handle = h;
  return &g_pool.recs[i];
}

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

static void list_remove_at(obj_list *l, size_t i) {
  memmove(&l->items[i], &l->items[i + 1], (l->n - i - 1) * sizeof *l->items);
  l->n--;
}

static dev_pool *pool_of(mc_obj_kind kind, int device) {
  if (!g_pool.pools[0]) {
    int n = mc_device_count() > 0 ? mc_device_count() : 1;
    g_pool.pools[0] = calloc((size_t)n, sizeof(dev_pool));
    g_pool.pools[1] = calloc((size_t)n, sizeof(dev_pool));
    if (!g_pool.pools[0] || !g_pool.pools[1]) {
      free(g_pool.pools[0]);
      free(g_pool.pools[1]);
      g_pool.pools[0] = g_pool.pools[1] = NULL;
      return NULL;
    }
    g_pool.npools = n;
  }
  if (device < 0 || device >= g_pool.npools) return NULL;
  return &g_pool.pools[kind - 1][device];
}

static const void *g_synced; /* known-idle stream (see above); atomic access only */

void mc_pool_note_launch(CUstream stream) {
  const void *expected = stream;
  if (stream && __atomic_load_n(&g_synced, __ATOMIC_ACQUIRE) == stream)
    __atomic_compare_exchange_n(&g_synced, &expected, NULL, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
}

/* 1 if `h` was the known-idle stream (the mark is consumed). */
static int take_synced_mark(const void *h) {
  const void *expected = h;
  return h && __atomic_compare_exchange_n(&g_synced, &expected, NULL, 0, __ATOMIC_ACQ_REL,
                                          __ATOMIC_ACQUIRE);
}

static int is_ready(mc_obj_kind kind, void *h) {
  CUresult r = kind == MC_OBJ_STREAM ? mc_cu.cuStreamQuery((CUstream)h)
                                     : mc_cu.cuEventQuery((CUevent)h);
  return r == 0;
}

/* Take an idle object of `kind` for `device`, polling a few draining ones if none is idle.
 * Lock held. */
static void *take_idle_locked(dev_pool *p, mc_obj_kind kind) {
  if (p->idle.n == 0) {
    size_t checks = 0;
    for (size_t i = 0; i < p->draining.n && checks < MC_DRAIN_CHECKS; ++checks) {
      void *h = p->draining.items[i];
      if (is_ready(kind, h)) {
        list_remove_at(&p->draining, i);
        if (list_push(&p->idle, h) != 0) return NULL;
        obj_rec *r = rec_find(h);
        if (r) r->state = ST_IDLE;
      } else {
        ++i;
      }
    }
  }
  if (p->idle.n == 0) return NULL;
  return p->idle.items[--p->idle.n];
}

static mc_status create_object(mc_obj_kind kind, void **out) {
  *out = NULL;
  mc_status st = mc_runtime_init();
  if (MC_FAILED(st)) return st;
  int device = mc_thread_device();
  if (device < 0 || device >= mc_device_count()) return MC_FAIL("cuDeviceGet", MC_E_BAD_DEVICE);

  pthread_mutex_lock(&g_pool.lock);
  dev_pool *p = pool_of(kind, device);
  void *h = p ? take_idle_locked(p, kind) : NULL;
  if (h) {
    obj_rec *r = rec_find(h);
    if (r) r->state = ST_LIVE;
    if (kind == MC_OBJ_STREAM) {
      MC_STAT_INC(stream_pool_hits);
      MC_STAT_DEC(pooled_streams);
      MC_STAT_INC(live_streams);
    } else {
      MC_STAT_INC(event_pool_hits);
      MC_STAT_DEC(pooled_events);
      MC_STAT_INC(live_events);
    }
    pthread_mutex_unlock(&g_pool.lock);
    *out = h;
    return MC_OK;
  }
  pthread_mutex_unlock(&g_pool.lock);

  mc_ctx_scope scope;
  st = mc_ctx_enter(device, &scope);
  if (MC_FAILED(st)) return st;
  CUresult res;
  if (kind == MC_OBJ_STREAM) {
    CUstream s = NULL;
    res = mc_cu.cuStreamCreate(&s, MC_CU_STREAM_NON_BLOCKING);
    h = s;
  } else {
    CUevent e = NULL;
    res = mc_cu.cuEventCreate(&e, MC_CU_EVENT_DISABLE_TIMING);
    h = e;
  }
  mc_ctx_leave(&scope);
  if (res != 0) return MC_FAIL(kind == MC_OBJ_STREAM ? "cuStreamCreate" : "cuEventCreate", res);
  if (kind == MC_OBJ_STREAM) take_synced_mark(h); /* a stale mark on a reused address */

  pthread_mutex_lock(&g_pool.lock);
  obj_rec *r = rec_insert(h);
  if (r) {
    r->kind = (uint8_t)kind;
    r->state = ST_LIVE;
    r->device = (int16_t)device;
  }
  if (kind == MC_OBJ_STREAM) {
    MC_STAT_INC(driver_stream_creates);
    MC_STAT_INC(live_streams);
  } else {
    MC_STAT_INC(driver_event_creates);
    MC_STAT_INC(live_events);
  }
  pthread_mutex_unlock(&g_pool.lock);
  /* Without a registry record the object still works; it is simply not pooled later. */
  *out = h;
  return MC_OK;
}

/* Give back an object. Returns 1 if it is ours (handled), 0 if foreign. Lock taken inside. */
static int give_back(mc_obj_kind kind, void *h, mc_status *st) {
  *st = MC_OK;
  pthread_mutex_lock(&g_pool.lock);
  obj_rec *r = rec_find(h);
  if (!r || r->kind != kind) {
    pthread_mutex_unlock(&g_pool.lock);
    return 0;
  }
  if (r->state != ST_LIVE) {
    pthread_mutex_unlock(&g_pool.lock);
    *st = MC_FAIL(kind == MC_OBJ_STREAM ? "mgpuStreamDestroy" : "mgpuEventDestroy",
                  MC_E_DOUBLE_DESTROY);
    return 1;
  }
  dev_pool *p = pool_of(kind, r->device);
  int known_idle = kind == MC_OBJ_STREAM && take_synced_mark(h);
  if (known_idle) MC_STAT_INC(stream_query_skips);
  int ready = known_idle || is_ready(kind, h);
  if (p && list_push(ready ? &p->idle : &p->draining, h) == 0) {
    r->state = ready ? ST_IDLE : ST_DRAINING;
  } else {
    r->state = ST_DRAINING; /* could not be listed: never reused, never freed */
  }
  if (kind == MC_OBJ_STREAM) {
    MC_STAT_DEC(live_streams);
    MC_STAT_INC(pooled_streams);
  } else {
    MC_STAT_DEC(live_events);
    MC_STAT_INC(pooled_events);
  }
  pthread_mutex_unlock(&g_pool.lock);
  return 1;
}

mc_status mc_stream_create(CUstream *out) {
  MC_STAT_INC(stream_creates);
  void *h = NULL;
  mc_status st = create_object(MC_OBJ_STREAM, &h);
  *out = (CUstream)h;
  return st;
}

mc_status mc_event_create(CUevent *out) {
  MC_STAT_INC(event_creates);
  void *h = NULL;
  mc_status st = create_object(MC_OBJ_EVENT, &h);
  *out = (CUevent)h;
  return st;
}

mc_status mc_stream_destroy(CUstream stream) {
  MC_STAT_INC(stream_destroys);
  mc_status st = mc_driver_load();
  if (MC_FAILED(st)) return st;
  if (give_back(MC_OBJ_STREAM, stream, &st)) return st;
  MC_CU_TRY("cuStreamDestroy(stream)", mc_cu.cuStreamDestroy(stream)); /* foreign: as stock */
  return MC_OK;
}

mc_status mc_event_destroy(CUevent event) {
  MC_STAT_INC(event_destroys);
  mc_status st = mc_driver_load();
  if (MC_FAILED(st)) return st;
  if (give_back(MC_OBJ_EVENT, event, &st)) return st;
  MC_CU_TRY("cuEventDestroy(event)", mc_cu.cuEventDestroy(event)); /* foreign: as stock */
  return MC_OK;
}

mc_obj_kind mc_pool_live_kind(const void *handle) {
  if (!handle) return MC_OBJ_NONE;
  pthread_mutex_lock(&g_pool.lock);
  obj_rec *r = rec_find(handle);
  mc_obj_kind k = (r && r->state == ST_LIVE) ? (mc_obj_kind)r->kind : MC_OBJ_NONE;
  pthread_mutex_unlock(&g_pool.lock);
  return k;
}

mc_status mc_stream_synchronize(CUstream stream) {
  mc_status st = mc_driver_load();
  if (MC_FAILED(st)) return st;
  if (stream) {
    if (!mc_config()->stream_query) /* before the sync */
      __atomic_store_n(&g_synced, (const void *)stream, __ATOMIC_RELEASE);
    CUresult r = mc_cu.cuStreamSynchronize(stream);
    if (r) {
      take_synced_mark(stream);
      return MC_FAIL("cuStreamSynchronize(stream)", r);
    }
    return MC_OK;
  }
  mc_ctx_scope scope;
  st = mc_ctx_enter(mc_thread_device(), &scope);
  if (MC_FAILED(st)) return st;
  CUresult r = mc_cu.cuStreamSynchronize(NULL);
  mc_ctx_leave(&scope);
  return r ? MC_FAIL("cuStreamSynchronize(stream)", r) : MC_OK;
}

mc_status mc_event_synchronize(CUevent event) {
  mc_status st = mc_driver_load();
  if (MC_FAILED(st)) return st;
  if (mc_pool_live_kind(event) == MC_OBJ_STREAM) return mc_stream_synchronize((CUstream)event);
  MC_CU_TRY("cuEventSynchronize(event)", mc_cu.cuEventSynchronize(event));
  return MC_OK;
}

mc_status mc_event_destroy_any(CUevent event) {
  mc_status st = mc_driver_load();
  if (MC_FAILED(st)) return st;
  if (mc_pool_live_kind(event) == MC_OBJ_STREAM) return mc_stream_destroy((CUstream)event);
  return mc_event_destroy(event);
}
