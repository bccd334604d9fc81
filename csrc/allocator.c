/* allocator.c - the caching allocator behind mgpuMemAlloc / mgpuMemFree (see allocator.h).
 *
 * Locking rule: g_alloc.lock guards the block table (every block the allocator made and has not
 * given back to the driver, found by address), every device's bins, LRU list, cached byte count
 * and idle events. Under the lock the only driver call is cuEventQuery (it never blocks).
 * Driver calls that allocate, free, synchronise, create or record run outside it; a block being
 * freed is marked B_FREEING meanwhile so no other thread can touch it. mc_pool_live_kind (which
 * takes the pool's lock) is never called with g_alloc.lock held.
 */
#include "allocator.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "context.h"
#include "driver.h"
#include "pool.h"
#include "stats.h"

#define MC_ALLOC_MAX_DEVICES 64
#define MC_ALLOC_QUERIES 8 /* pending events polled per allocation, at most */

typedef enum { B_LIVE = 1, B_FREEING = 2, B_CACHED = 3 } block_state;

typedef struct mc_block {
  CUdeviceptr ptr;        /* the driver allocation; immutable */
  uint64_t bytes;         /* its size (the class size, or the exact size when cls < 0); immutable */
  int16_t device;         /* device ordinal; immutable */
  int8_t managed;         /* 1: cuMemAllocManaged; immutable */
  int8_t ordered;         /* cached: freed on a live pooled stream (stream-ordered reuse allowed) */
  int16_t cls;            /* size class, -1: never cached; immutable */
  uint8_t state;          /* block_state; under the lock */
  CUstream stream;        /* cached: the stream of the free (compared, never used); under the lock */
  CUevent event;          /* cached: recorded at the free, NULL once known complete; owned */
  struct mc_block *hnext; /* block table chain; under the lock */
  struct mc_block *bprev, *bnext; /* bin list (cached only); under the lock */
  struct mc_block *lprev, *lnext; /* device LRU list, oldest first (cached only); under the lock */
} mc_block;

typedef struct dev_alloc {
  mc_block *bins[2][MC_ALLOC_CLASSES]; /* [managed][class]: cached blocks, last freed first */
  mc_block *lru_head, *lru_tail;       /* cached blocks of both kinds, least recently freed first */
  uint64_t cached_bytes;               /* sum of the cached blocks' sizes */
  CUevent *events;                     /* idle events of this device (owned array) */
  size_t nevents, cap_events;
} dev_alloc;

static struct {
  pthread_mutex_t lock;                    /* see the locking rule above */
  mc_block **table;                        /* block table: chained hash by address */
  size_t nbuckets, count;
  dev_alloc *devs[MC_ALLOC_MAX_DEVICES];   /* allocated on first use, never freed */
} g_alloc = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, {NULL}};

int mc_alloc_class(uint64_t bytes, uint64_t *class_bytes) {
  if (bytes <= 512) {
    *class_bytes = 512;
    return 0;
  }
  if (bytes > (1ULL << 60)) return -1;
  int p = 63 - __builtin_clzll(bytes - 1); /* 2^p < bytes <= 2^(p+1), p >= 9 */
  uint64_t step = 1ULL << (p - 2);
  uint64_t k = (bytes + step - 1) / step; /* 5..8 */
  *class_bytes = k * step;
  return 1 + (p - 9) * 4 + (int)(k - 5);
}

/* ---- block table (lock held) ---- */

static size_t hash_addr(CUdeviceptr p) {
  uint64_t x = (uint64_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (size_t)x;
}

static mc_block *table_find(CUdeviceptr p) {
  if (!g_alloc.table) return NULL;
  for (mc_block *b = g_alloc.table[hash_addr(p) & (g_alloc.nbuckets - 1)]; b; b = b->hnext)
    if (b->ptr == p) return b;
  return NULL;
}

static int table_insert(mc_block *b) {
  if (g_alloc.count + 1 > g_alloc.nbuckets) {
    size_t n = g_alloc.nbuckets ? g_alloc.nbuckets * 2 : 256;
    mc_block **t = calloc(n, sizeof *t);
    if (!t) return -1;
    for (size_t i = 0; i < g_alloc.nbuckets; ++i) {
      for (mc_block *x = g_alloc.table[i], *next; x; x = next) {
        next = x->hnext;
        size_t j = hash_addr(x->ptr) & (n - 1);
        x->hnext = t[j];
        t[j] = x;
      }
    }
    free(g_alloc.table);
    g_alloc.table = t;
    g_alloc.nbuckets = n;
  }
  size_t j = hash_addr(b->ptr) & (g_alloc.nbuckets - 1);
  b->hnext = g_alloc.table[j];
  g_alloc.table[j] = b;
  g_alloc.count++;
  return 0;
}

static void table_remove(mc_block *b) {
  mc_block **pp = &g_alloc.table[hash_addr(b->ptr) & (g_alloc.nbuckets - 1)];
  while (*pp && *pp != b) pp = &(*pp)->hnext;
  if (*pp) {
    *pp = b->hnext;
    g_alloc.count--;
  }
}

/* ---- per-device state (lock held) ---- */

static dev_alloc *dev_of(int device) {
  if (device < 0 || device >= MC_ALLOC_MAX_DEVICES) return NULL;
  if (!g_alloc.devs[device]) g_alloc.devs[device] = calloc(1, sizeof(dev_alloc));
  return g_alloc.devs[device];
}

static void event_push(dev_alloc *d, CUevent e) {
  if (!e) return;
  if (d->nevents == d->cap_events) {
    size_t n = d->cap_events ? d->cap_events * 2 : 16;
    CUevent *a = realloc(d->events, n * sizeof *a);
    if (!a) return; /* the event is dropped (never destroyed): harmless */
    d->events = a;
    d->cap_events = n;
  }
  d->events[d->nevents++] = e;
}

static CUevent event_pop(dev_alloc *d) { return d->nevents ? d->events[--d->nevents] : NULL; }

/* Put a block being freed into its bin and at the LRU tail. */
static void cache_insert(dev_alloc *d, mc_block *b) {
  mc_block **head = &d->bins[b->managed][b->cls];
  b->bprev = NULL;
  b->bnext = *head;
  if (*head) (*head)->bprev = b;
  *head = b;
  b->lnext = NULL;
  b->lprev = d->lru_tail;
  if (d->lru_tail) d->lru_tail->lnext = b;
  else d->lru_head = b;
  d->lru_tail = b;
  d->cached_bytes += b->bytes;
  b->state = B_CACHED;
  mc_stat_add(MC_STAT_alloc_bytes_cached, (int64_t)b->bytes);
}

/* Take a block out of its bin and the LRU list (it stays in the block table). */
static void cache_unlink(dev_alloc *d, mc_block *b) {
  if (b->bprev) b->bprev->bnext = b->bnext;
  else d->bins[b->managed][b->cls] = b->bnext;
  if (b->bnext) b->bnext->bprev = b->bprev;
  if (b->lprev) b->lprev->lnext = b->lnext;
  else d->lru_head = b->lnext;
  if (b->lnext) b->lnext->lprev = b->lprev;
  else d->lru_tail = b->lprev;
  b->bprev = b->bnext = b->lprev = b->lnext = NULL;
  d->cached_bytes -= b->bytes;
  mc_stat_add(MC_STAT_alloc_bytes_cached, -(int64_t)b->bytes);
}

/* Detach cached blocks (oldest first) into a list linked through lnext, to be released outside
 * the lock: all of them, or while the device holds more than `keep` bytes. */
static mc_block *detach_lru(dev_alloc *d, uint64_t keep, int all) {
  mc_block *list = NULL, **tail = &list;
  while (d->lru_head && (all || d->cached_bytes > keep)) {
    mc_block *b = d->lru_head;
    cache_unlink(d, b);
    table_remove(b);
    b->state = B_FREEING;
    *tail = b;
    tail = &b->lnext;
  }
  return list;
}

/* A cached block of class `cls` that may be handed out now, or NULL. `stream`: the allocation's
 * stream when stream-ordered reuse is allowed for it, else NULL. */
static mc_block *take_locked(dev_alloc *d, int managed, int cls, CUstream stream, int *ordered) {
  int queries = MC_ALLOC_QUERIES;
  for (mc_block *b = d->bins[managed][cls]; b; b = b->bnext) {
    if (b->event && stream && b->ordered && b->stream == stream) {
      *ordered = 1;
    } else if (b->event) {
      if (queries-- <= 0 || mc_cu.cuEventQuery(b->event) != MC_CUDA_SUCCESS) continue;
    }
    event_push(d, b->event);
    b->event = NULL;
    b->stream = NULL;
    cache_unlink(d, b);
    b->state = B_LIVE;
    return b;
  }
  return NULL;
}

/* ---- driver calls (no lock) ---- */

static mc_status driver_alloc(int device, int managed, uint64_t bytes, CUdeviceptr *p) {
  mc_ctx_scope scope;
  mc_status st = mc_ctx_enter(device, &scope);
  if (MC_FAILED(st)) return st;
  CUresult r = managed ? mc_cu.cuMemAllocManaged(p, bytes, MC_CU_MEM_ATTACH_GLOBAL)
                       : mc_cu.cuMemAlloc(p, bytes);
  mc_ctx_leave(&scope);
  if (r != 0) return MC_FAIL(managed ? "cuMemAllocManaged" : "cuMemAlloc", r);
  return MC_OK;
}

/* cuMemFree in `device`'s context (the stock call). */
static mc_status driver_free(int device, CUdeviceptr p) {
  mc_ctx_scope scope;
  mc_status st = mc_ctx_enter(device, &scope);
  if (MC_FAILED(st)) return st;
  CUresult r = mc_cu.cuMemFree(p);
  mc_ctx_leave(&scope);
  return r ? MC_FAIL("cuMemFree", r) : MC_OK;
}

/* Give detached blocks back to the driver, once the work that may use them has finished. */
static mc_status release_list(mc_block *list) {
  mc_status first = MC_OK;
  for (mc_block *b = list; b; b = b->lnext)
    if (b->event) mc_cu.cuEventSynchronize(b->event); /* a failure shows again in cuMemFree */
  for (mc_block *b = list, *next; b; b = next) {
    next = b->lnext;
    mc_status st = driver_free(b->device, b->ptr);
    if (MC_FAILED(st) && !MC_FAILED(first)) first = st;
    MC_STAT_INC(alloc_releases);
    pthread_mutex_lock(&g_alloc.lock);
    event_push(dev_of(b->device), b->event);
    pthread_mutex_unlock(&g_alloc.lock);
    free(b);
  }
  return first;
}

static mc_status release_device(int device) {
  pthread_mutex_lock(&g_alloc.lock);
  dev_alloc *d = dev_of(device);
  mc_block *list = d ? detach_lru(d, 0, 1) : NULL;
  pthread_mutex_unlock(&g_alloc.lock);
  return release_list(list);
}

mc_status mc_alloc_release_all(uint64_t *released) {
  uint64_t before = __atomic_load_n(&mc_stats_values[MC_STAT_alloc_releases], __ATOMIC_RELAXED);
  mc_status first = MC_OK;
  for (int i = 0; i < MC_ALLOC_MAX_DEVICES; ++i) {
    pthread_mutex_lock(&g_alloc.lock);
    int present = g_alloc.devs[i] != NULL;
    pthread_mutex_unlock(&g_alloc.lock);
    if (!present) continue;
    mc_status st = release_device(i);
    if (MC_FAILED(st) && !MC_FAILED(first)) first = st;
  }
  if (released)
    *released =
        __atomic_load_n(&mc_stats_values[MC_STAT_alloc_releases], __ATOMIC_RELAXED) - before;
  return first;
}

mc_status mc_alloc_get(uint64_t bytes, CUstream stream, int host_shared, void **out) {
  *out = NULL;
  mc_status st = mc_runtime_init();
  if (MC_FAILED(st)) return st;
  int device = mc_thread_device();
  if (device < 0 || device >= mc_device_count() || device >= MC_ALLOC_MAX_DEVICES)
    return MC_FAIL("cuDeviceGet", MC_E_BAD_DEVICE);
  uint64_t cap = mc_config()->allocator_cache_bytes;
  uint64_t size = 0;
  int cls = mc_alloc_class(bytes, &size);
  if (cls < 0 || size > cap) {
    cls = -1; /* never cached: allocated at its exact size */
    size = bytes;
  }
  if (cls >= 0) {
    /* Stream-ordered reuse only for device memory on one of our live streams, whose handle
     * always names the same driver stream. */
    CUstream ordered_on =
        (!host_shared && stream && mc_pool_live_kind(stream) == MC_OBJ_STREAM) ? stream : NULL;
    int ordered = 0;
    pthread_mutex_lock(&g_alloc.lock);
    dev_alloc *d = dev_of(device);
    mc_block *b = d ? take_locked(d, host_shared ? 1 : 0, cls, ordered_on, &ordered) : NULL;
    pthread_mutex_unlock(&g_alloc.lock);
    if (b) {
      MC_STAT_INC(alloc_hits);
      if (ordered) MC_STAT_INC(alloc_ordered_hits);
      mc_stat_add(MC_STAT_alloc_bytes_in_use, (int64_t)b->bytes);
      *out = (void *)(uintptr_t)b->ptr;
      return MC_OK;
    }
  }
  MC_STAT_INC(alloc_misses);
  CUdeviceptr p = 0;
  st = driver_alloc(device, host_shared, size, &p);
  if (st.result == MC_CUDA_ERROR_OUT_OF_MEMORY) {
    MC_STAT_INC(alloc_oom_retries);
    release_device(device);
    st = driver_alloc(device, host_shared, size, &p);
    if (st.result == MC_CUDA_ERROR_OUT_OF_MEMORY && size != bytes) {
      cls = -1; /* the rounding did not fit: try the exact size, never cached */
      size = bytes;
      st = driver_alloc(device, host_shared, size, &p);
    }
  }
  if (MC_FAILED(st)) return st;
  mc_block *b = calloc(1, sizeof *b);
  if (b) {
    b->ptr = p;
    b->bytes = size;
    b->device = (int16_t)device;
    b->managed = (int8_t)(host_shared ? 1 : 0);
    b->cls = (int16_t)cls;
    b->state = B_LIVE;
    pthread_mutex_lock(&g_alloc.lock);
    int bad = table_insert(b);
    pthread_mutex_unlock(&g_alloc.lock);
    if (bad) {
      free(b); /* untracked: its free goes to cuMemFree, as stock */
      b = NULL;
    }
  }
  if (b) mc_stat_add(MC_STAT_alloc_bytes_in_use, (int64_t)size);
  *out = (void *)(uintptr_t)p;
  return MC_OK;
}

/* Free a block that will not be cached: out of the table, back to the driver. */
static mc_status drop_block(mc_block *b) {
  pthread_mutex_lock(&g_alloc.lock);
  table_remove(b);
  pthread_mutex_unlock(&g_alloc.lock);
  mc_status st = driver_free(b->device, b->ptr);
  free(b);
  return st;
}

mc_status mc_alloc_put(void *ptr, CUstream stream) {
  mc_status st = mc_runtime_init();
  if (MC_FAILED(st)) return st;
  CUdeviceptr p = (CUdeviceptr)(uintptr_t)ptr;
  pthread_mutex_lock(&g_alloc.lock);
  mc_block *b = ptr ? table_find(p) : NULL;
  if (!b) {
    pthread_mutex_unlock(&g_alloc.lock);
    return driver_free(mc_thread_device(), p); /* not ours: as stock */
  }
  if (b->state != B_LIVE) {
    pthread_mutex_unlock(&g_alloc.lock);
    return MC_FAIL("mgpuMemFree", MC_E_STALE_HANDLE); /* freed twice: the cache stays intact */
  }
  b->state = B_FREEING;
  mc_stat_add(MC_STAT_alloc_bytes_in_use, -(int64_t)b->bytes);
  uint64_t cap = mc_config()->allocator_cache_bytes;
  int cacheable = b->cls >= 0 && b->bytes <= cap;
  dev_alloc *d = dev_of(b->device);
  CUevent ev = (cacheable && stream && d) ? event_pop(d) : NULL;
  pthread_mutex_unlock(&g_alloc.lock);
  if (!cacheable || !d) return drop_block(b);

  int ordered = 0;
  mc_ctx_scope scope;
  if (stream) {
    ordered = mc_pool_live_kind(stream) == MC_OBJ_STREAM;
    CUresult r = 0;
    if (!ev) {
      st = mc_ctx_enter(b->device, &scope);
      if (!MC_FAILED(st)) {
        r = mc_cu.cuEventCreate(&ev, MC_CU_EVENT_DISABLE_TIMING);
        mc_ctx_leave(&scope);
      }
      if (MC_FAILED(st) || r) ev = NULL;
    }
    if (!ev || mc_cu.cuEventRecord(ev, stream) != 0) {
      /* e.g. a stream of another device: free as the stock wrapper does (synchronously). */
      if (ev) {
        pthread_mutex_lock(&g_alloc.lock);
        event_push(d, ev);
        pthread_mutex_unlock(&g_alloc.lock);
      }
      return drop_block(b);
    }
  } else {
    /* The stock cuMemFree waits for the device; so do we, and the block is ready at once. */
    st = mc_ctx_enter(b->device, &scope);
    if (MC_FAILED(st)) return drop_block(b);
    CUresult r = mc_cu.cuCtxSynchronize();
    mc_ctx_leave(&scope);
    if (r) return drop_block(b);
  }

  pthread_mutex_lock(&g_alloc.lock);
  b->stream = stream;
  b->event = ev;
  b->ordered = (int8_t)ordered;
  cache_insert(d, b);
  mc_block *victims = detach_lru(d, cap, 0);
  pthread_mutex_unlock(&g_alloc.lock);
  return victims ? release_list(victims) : MC_OK;
}
