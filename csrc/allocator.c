/* allocator.c - the caching allocator behind mgpuMemAlloc / mgpuMemFree (see allocator.h), with
 * its per-device reclaimer thread.
 *
 * Block life: LIVE (handed out) -> freed with the NULL stream: the caller waits for the device,
 * clears it -> CACHED (ready, in a bin and the LRU list); freed on a stream: PENDING (in the
 * device's pending list, oldest first, and a pending bin) -> the reclaimer takes the ones freed
 * before its device-wide synchronisation: CLEARING (on its own list) -> CACHED. FREEING: on its way
 * back to the driver (no longer in the block table). An ordered allocation (opt-in) may take a
 * PENDING block back to LIVE.
 *
 * Reclaimer (one thread per device, started on the first stream free or out-of-memory release of
 * that device, detached, all signals blocked): while blocks are pending or a release is asked, it
 * reads the device's free sequence E, calls cuCtxSynchronize in the device's primary context
 * (current on that thread for its life), takes the pending blocks numbered <= E, clears them
 * (cuMemsetD32Async on the device's clearing stream, non-blocking, made when the thread is started
 * and shared with NULL-stream frees, + cuStreamSynchronize of that stream: only memsets wait) and
 * makes them ready; when a release was asked it gives them and every ready block back instead
 * (cuMemFree) and then signals the waiting allocation. If the synchronisation or the clearing
 * fails, the blocks are never reused (forgotten, counted in alloc_lost). With
 * MGPU_CACHED_ALLOCATOR_RECLAIM_US=n it first sleeps n µs after waking for frees (not for a
 * release), so that the frees that follow share one device-wide wait. Program threads never wait
 * for it except an out-of-memory allocation, for at most MGPU_CACHED_ALLOCATOR_OOM_WAIT_MS; so the
 * reclaimer sitting in cuCtxSynchronize behind a kernel that waits for the host is harmless. At
 * exit it makes no new driver call (alloc_at_exit runs before the driver's own exit handler).
 *
 * Locking rule: g_alloc.lock guards the block table (every block the allocator made and has not
 * given back to the driver, found by address) and every field of every device (bins, lists, byte
 * counts, sequence numbers, release requests, the reclaimer flag); each device's condition
 * variables are used with it. No driver call is made with it held. mc_pool_live_kind is never
 * called here (memory.c decides which streams may be followed in order).
 */
#include "allocator.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "context.h"
#include "cuda_api.h"
#include "driver.h"
#include "stats.h"

#define MC_ALLOC_MAX_DEVICES 64
#define MC_ALLOC_CLASSES 224     /* size classes: 4 per power of two from 512 B up to 2^60 */
#define MC_ALLOC_ORDERED_SCAN 16 /* pending blocks of a class looked at by an ordered allocation */

typedef enum { B_LIVE = 1, B_FREEING, B_PENDING, B_CLEARING, B_CACHED } block_state;

typedef struct mc_block {
  CUdeviceptr ptr;        /* the driver allocation; immutable */
  uint64_t bytes;         /* its size (the class size, or the exact size when cls < 0); immutable */
  int16_t device;         /* device ordinal; immutable */
  int8_t managed;         /* 1: cuMemAllocManaged; immutable */
  int16_t cls;            /* size class, -1: never cached; immutable */
  uint8_t state;          /* block_state; under the lock */
  const void *key;        /* PENDING: the free's stream key (compared, never used); under the lock */
  uint64_t seq;           /* PENDING/CLEARING: the device's free sequence number at the free */
  struct mc_block *hnext; /* block table chain; under the lock */
  struct mc_block *bprev, *bnext; /* CACHED: its bin; PENDING: its pending bin; under the lock */
  struct mc_block *lprev, *lnext; /* CACHED: the LRU list (oldest first); PENDING: the pending
                                     list (oldest first); CLEARING/FREEING: a private batch list
                                     (lnext only, owned by the thread that detached it) */
} mc_block;

typedef struct dev_alloc {
  mc_block *bins[2][MC_ALLOC_CLASSES];  /* [managed][class]: ready blocks, last freed first */
  mc_block *lru_head, *lru_tail;        /* ready blocks of both kinds, least recently freed first */
  uint64_t cached_bytes;                /* sum of the ready blocks' sizes */
  mc_block *pbins[2][MC_ALLOC_CLASSES]; /* [managed][class]: pending blocks, last freed first */
  mc_block *pend_head, *pend_tail;      /* pending blocks, lowest sequence number first */
  uint64_t unready_bytes;               /* PENDING + CLEARING bytes */
  uint64_t free_seq;                    /* sequence number of the last stream free */
  int reclaimer;                        /* 1 once its thread was started */
  pthread_cond_t wake;                  /* the reclaimer waits here for work */
  pthread_cond_t done;                  /* broadcast when a release request is done (monotonic) */
  uint64_t release_req, release_done;   /* release requests made / served (out of memory) */
  CUstream zero_stream;                 /* blocks are cleared on it, by NULL-stream frees and
                                           the reclaimer (made lazily, owned, never destroyed) */
} dev_alloc;

static struct {
  pthread_mutex_t lock;                    /* see the locking rule above */
  mc_block **table;                        /* block table: chained hash by address */
  size_t nbuckets, count;
  dev_alloc *devs[MC_ALLOC_MAX_DEVICES];   /* allocated on first use, never freed */
  int exiting;                             /* atomic: set at exit (alloc_at_exit) */
  int rounds;                              /* atomic: reclaimer rounds running now */
} g_alloc = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, {NULL}, 0, 0};

#define MC_ALLOC_EXIT_WAIT_MS 1000 /* at exit, how long to wait for a round to leave the driver */

/* At exit (an atexit handler registered after cuInit, so it runs before the driver's own exit
 * handler tears the driver down; also the library's destructor): no new driver call from the
 * reclaimers, and a round in progress gets a short while to finish its driver calls. A round
 * blocked in cuCtxSynchronize behind a kernel is not waited for beyond that: exit goes on. */
static void alloc_at_exit(void) {
  __atomic_store_n(&g_alloc.exiting, 1, __ATOMIC_SEQ_CST);
  for (int i = 0; i < MC_ALLOC_EXIT_WAIT_MS && __atomic_load_n(&g_alloc.rounds, __ATOMIC_SEQ_CST);
       ++i) {
    struct timespec t = {0, 1000000L};
    nanosleep(&t, NULL);
  }
}

__attribute__((destructor)) static void alloc_destructor(void) { alloc_at_exit(); }

static pthread_once_t g_atexit_once = PTHREAD_ONCE_INIT;
static void register_at_exit(void) { atexit(alloc_at_exit); }

static int exiting(void) { return __atomic_load_n(&g_alloc.exiting, __ATOMIC_SEQ_CST); }

/* Size class of `bytes`: its index (0..MC_ALLOC_CLASSES-1) and rounded size; -1 if too large. */
static int size_class(uint64_t bytes, uint64_t *class_bytes) {
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
  if (!g_alloc.devs[device]) {
    dev_alloc *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&d->done, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&d->wake, NULL);
    g_alloc.devs[device] = d;
  }
  return g_alloc.devs[device];
}

/* Link a block into a bin (last freed first). */
static void bin_push(mc_block **head, mc_block *b) {
  b->bprev = NULL;
  b->bnext = *head;
  if (*head) (*head)->bprev = b;
  *head = b;
}

static void bin_unlink(mc_block **head, mc_block *b) {
  if (b->bprev) b->bprev->bnext = b->bnext;
  else *head = b->bnext;
  if (b->bnext) b->bnext->bprev = b->bprev;
  b->bprev = b->bnext = NULL;
}

/* Append to a doubly linked list through lprev/lnext. */
static void list_append(mc_block **head, mc_block **tail, mc_block *b) {
  b->lnext = NULL;
  b->lprev = *tail;
  if (*tail) (*tail)->lnext = b;
  else *head = b;
  *tail = b;
}

static void list_unlink(mc_block **head, mc_block **tail, mc_block *b) {
  if (b->lprev) b->lprev->lnext = b->lnext;
  else *head = b->lnext;
  if (b->lnext) b->lnext->lprev = b->lprev;
  else *tail = b->lprev;
  b->lprev = b->lnext = NULL;
}

/* A cleared block becomes ready: its bin and the LRU tail. */
static void ready_insert(dev_alloc *d, mc_block *b) {
  bin_push(&d->bins[b->managed][b->cls], b);
  list_append(&d->lru_head, &d->lru_tail, b);
  d->cached_bytes += b->bytes;
  b->state = B_CACHED;
  mc_stat_add(MC_STAT_alloc_bytes_cached, (int64_t)b->bytes);
}

static void ready_unlink(dev_alloc *d, mc_block *b) {
  bin_unlink(&d->bins[b->managed][b->cls], b);
  list_unlink(&d->lru_head, &d->lru_tail, b);
  d->cached_bytes -= b->bytes;
  mc_stat_add(MC_STAT_alloc_bytes_cached, -(int64_t)b->bytes);
}

/* A block freed on a stream waits for the reclaimer. */
static void pending_insert(dev_alloc *d, mc_block *b, const void *key) {
  b->key = key;
  b->seq = ++d->free_seq;
  bin_push(&d->pbins[b->managed][b->cls], b);
  list_append(&d->pend_head, &d->pend_tail, b);
  d->unready_bytes += b->bytes;
  b->state = B_PENDING;
  mc_stat_add(MC_STAT_alloc_bytes_pending, (int64_t)b->bytes);
}

static void pending_unlink(dev_alloc *d, mc_block *b) {
  bin_unlink(&d->pbins[b->managed][b->cls], b);
  list_unlink(&d->pend_head, &d->pend_tail, b);
  b->key = NULL;
}

/* A PENDING or CLEARING block leaves those states. */
static void unready_done(dev_alloc *d, mc_block *b) {
  d->unready_bytes -= b->bytes;
  mc_stat_add(MC_STAT_alloc_bytes_pending, -(int64_t)b->bytes);
}

/* Detach ready blocks (oldest first) for release, onto *list through lnext: all of them, or while
 * the device keeps more than `keep` bytes. They leave the block table. */
static void detach_ready(dev_alloc *d, uint64_t keep, int all, mc_block **list) {
  while (d->lru_head && (all || d->cached_bytes > keep)) {
    mc_block *b = d->lru_head;
    ready_unlink(d, b);
    table_remove(b);
    b->state = B_FREEING;
    b->lnext = *list;
    *list = b;
  }
}

/* Detach the pending blocks freed with sequence number <= `upto` (a prefix of the pending list),
 * as CLEARING, or (release) as FREEING out of the block table; onto *list through lnext. */
static void detach_pending(dev_alloc *d, uint64_t upto, int release, mc_block **list) {
  while (d->pend_head && d->pend_head->seq <= upto) {
    mc_block *b = d->pend_head;
    pending_unlink(d, b);
    if (release) {
      unready_done(d, b);
      table_remove(b);
      b->state = B_FREEING;
    } else {
      b->state = B_CLEARING;
    }
    b->lnext = *list;
    *list = b;
  }
}

/* A block of class `cls` that may be handed out now, or NULL: a ready one, else (key != NULL,
 * ordered reuse) a pending device block freed with the same key (*ordered = 1). */
static mc_block *take_locked(dev_alloc *d, int managed, int cls, const void *key, int *ordered) {
  mc_block *b = d->bins[managed][cls];
  if (b) {
    ready_unlink(d, b);
    b->state = B_LIVE;
    return b;
  }
  if (!key || managed) return NULL;
  int n = MC_ALLOC_ORDERED_SCAN;
  for (b = d->pbins[0][cls]; b && n-- > 0; b = b->bnext) {
    if (b->key != key) continue;
    pending_unlink(d, b);
    unready_done(d, b);
    b->state = B_LIVE;
    *ordered = 1;
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

/* Give detached (FREEING) blocks back to the driver. Every one of them is cleared or covered by
 * a device-wide synchronisation, so no work that was enqueued before its free still uses it. */
static mc_status release_list(mc_block *list) {
  mc_status first = MC_OK;
  for (mc_block *b = list, *next; b; b = next) {
    next = b->lnext;
    mc_status st = driver_free(b->device, b->ptr);
    if (MC_FAILED(st) && !MC_FAILED(first)) first = st;
    MC_STAT_INC(alloc_releases);
    free(b);
  }
  return first;
}

/* Free a block that will not be cached (FREEING, still in the table): the stock cuMemFree. */
static mc_status drop_block(mc_block *b) {
  pthread_mutex_lock(&g_alloc.lock);
  table_remove(b);
  pthread_mutex_unlock(&g_alloc.lock);
  mc_status st = driver_free(b->device, b->ptr);
  free(b);
  return st;
}

/* The stream NULL-stream frees of `device` clear on, made on first use (its context current);
 * NULL (the legacy stream) if it cannot be made. */
static CUstream zero_stream(dev_alloc *d) {
  pthread_mutex_lock(&g_alloc.lock);
  CUstream s = d->zero_stream;
  pthread_mutex_unlock(&g_alloc.lock);
  if (s) return s;
  if (mc_cu.cuStreamCreate(&s, MC_CU_STREAM_NON_BLOCKING) != 0) return NULL;
  CUstream extra = NULL;
  pthread_mutex_lock(&g_alloc.lock);
  if (d->zero_stream) {
    extra = s;
    s = d->zero_stream;
  } else {
    d->zero_stream = s;
  }
  pthread_mutex_unlock(&g_alloc.lock);
  if (extra) mc_cu.cuStreamDestroy(extra);
  return s;
}

/* Clear blocks (a list through lnext) on `zs`, the device's context current: 0 on success. */
static int clear_blocks(mc_block *list, CUstream zs) {
  uint64_t bytes = 0;
  for (mc_block *b = list; b; b = b->lnext) {
    if (exiting() || mc_cu.cuMemsetD32Async(b->ptr, 0, (size_t)(b->bytes / 4), zs) != 0) return -1;
    bytes += b->bytes;
  }
  if (mc_cu.cuStreamSynchronize(zs) != 0) return -1;
  mc_stat_add(MC_STAT_alloc_bytes_zeroed, (int64_t)bytes);
  return 0;
}

/* Forget blocks whose safety could not be established (never reused, never freed). Lock held. */
static void lose_blocks(dev_alloc *d, mc_block *list) {
  for (mc_block *b = list, *next; b; b = next) {
    next = b->lnext;
    unready_done(d, b);
    table_remove(b);
    MC_STAT_INC(alloc_lost);
    free(b);
  }
}

/* ---- the reclaimer ---- */

/* One round for `device`, its context current on the calling thread: wait for the device, then
 * clear the pending blocks freed before the wait began and make them ready, or, when a release
 * was asked, give them back with every ready block. `zs`: the stream to clear on. */
static void reclaim_round_(int device, CUstream zs);

static void reclaim_round(int device, CUstream zs) {
  __atomic_add_fetch(&g_alloc.rounds, 1, __ATOMIC_SEQ_CST); /* before the exiting test: see
                                                              alloc_at_exit */
  if (!exiting()) reclaim_round_(device, zs);
  __atomic_sub_fetch(&g_alloc.rounds, 1, __ATOMIC_SEQ_CST);
}

/* At exit a round stops before its next driver call; its blocks stay where they are. */
static void reclaim_round_(int device, CUstream zs) {
  pthread_mutex_lock(&g_alloc.lock);
  dev_alloc *d = g_alloc.devs[device];
  uint64_t upto = d->free_seq;
  pthread_mutex_unlock(&g_alloc.lock);
  CUresult r = mc_cu.cuCtxSynchronize(); /* every stream of the device, foreign ones included */
  MC_STAT_INC(alloc_reclaims);
  uint64_t cap = mc_config()->allocator_cache_bytes;
  mc_block *batch = NULL, *victims = NULL;
  pthread_mutex_lock(&g_alloc.lock);
  uint64_t req = d->release_req;
  int release = req != d->release_done;
  if (r != 0) {
    detach_pending(d, upto, 0, &batch);
    lose_blocks(d, batch); /* not proven finished: never reused */
    batch = NULL;
  } else {
    detach_pending(d, upto, release, release ? &victims : &batch);
  }
  if (release) detach_ready(d, 0, 1, &victims);
  pthread_mutex_unlock(&g_alloc.lock);

  if (release) {
    if (!exiting()) release_list(victims);
    pthread_mutex_lock(&g_alloc.lock);
    d->release_done = req;
    pthread_cond_broadcast(&d->done);
    pthread_mutex_unlock(&g_alloc.lock);
    return;
  }
  if (!batch) return;
  int bad = mc_config()->allocator_zero && clear_blocks(batch, zs) != 0;
  pthread_mutex_lock(&g_alloc.lock);
  if (bad) {
    lose_blocks(d, batch);
  } else {
    for (mc_block *b = batch, *next; b; b = next) {
      next = b->lnext;
      unready_done(d, b);
      ready_insert(d, b);
    }
  }
  detach_ready(d, cap, 0, &victims);
  pthread_mutex_unlock(&g_alloc.lock);
  if (!exiting()) release_list(victims);
}

static void *reclaimer_main(void *arg) {
  int device = (int)(intptr_t)arg;
  mc_ctx_scope scope; /* the device's context stays current on this thread for its life */
  /* Its driver calls (cuCtxGetCurrent, cuCtxPushCurrent) count as a round too: a thread that
   * starts while the process exits makes none (seen under load: a call after the driver's own
   * exit handler had torn it down). */
  __atomic_add_fetch(&g_alloc.rounds, 1, __ATOMIC_SEQ_CST);
  int go = !exiting();
  if (go) mc_ctx_enter(device, &scope);
  __atomic_sub_fetch(&g_alloc.rounds, 1, __ATOMIC_SEQ_CST);
  if (!go) return NULL;
  pthread_mutex_lock(&g_alloc.lock);
  dev_alloc *d = g_alloc.devs[device];
  pthread_mutex_unlock(&g_alloc.lock);
  CUstream zs = zero_stream(d); /* made by start_reclaimer; NULL: the legacy stream */
  pthread_mutex_lock(&g_alloc.lock);
  for (;;) {
    while (!exiting() && !d->pend_head && d->release_req == d->release_done)
      pthread_cond_wait(&d->wake, &g_alloc.lock);
    if (exiting()) break;
    int release = d->release_req != d->release_done;
    pthread_mutex_unlock(&g_alloc.lock);
    unsigned long us = mc_config()->allocator_reclaim_us;
    if (us && !release) { /* gather the frees that follow before the device-wide wait */
      struct timespec t = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000L};
      nanosleep(&t, NULL);
    }
    reclaim_round(device, zs);
    pthread_mutex_lock(&g_alloc.lock);
  }
  pthread_mutex_unlock(&g_alloc.lock);
  return NULL;
}

/* Make sure `device`'s reclaimer runs and knows there is work. Lock held; returns 1 when the
 * caller must start the thread (start_reclaimer) after unlocking. */
static int poke_reclaimer(dev_alloc *d) {
  if (d->reclaimer) {
    pthread_cond_signal(&d->wake);
    return 0;
  }
  d->reclaimer = 1;
  return 1;
}

/* Start the reclaimer thread (detached, every signal blocked). No lock held. 0 on success; on
 * failure the device is marked as having none again. */
static int start_reclaimer(int device) {
  pthread_once(&g_atexit_once, register_at_exit); /* after cuInit (mc_runtime_init) */
  /* The clearing stream is made here, so the thread makes no driver call that the caller's
   * could not see (the stream is the device's zero_stream, shared with NULL-stream frees). */
  pthread_mutex_lock(&g_alloc.lock);
  dev_alloc *d = g_alloc.devs[device];
  pthread_mutex_unlock(&g_alloc.lock);
  mc_ctx_scope scope;
  if (!MC_FAILED(mc_ctx_enter(device, &scope))) {
    zero_stream(d);
    mc_ctx_leave(&scope);
  }
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_t t;
  int e = pthread_create(&t, &attr, reclaimer_main, (void *)(intptr_t)device);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  if (e) {
    pthread_mutex_lock(&g_alloc.lock);
    g_alloc.devs[device]->reclaimer = 0;
    pthread_mutex_unlock(&g_alloc.lock);
  }
  return e;
}

/* Out of memory on `device`: have the reclaimer give the cleared blocks back, waiting for it at
 * most MGPU_CACHED_ALLOCATOR_OOM_WAIT_MS (cuMemFree waits for the device, which may be busy with
 * a kernel that waits for this very thread). */
static void oom_release(int device) {
  pthread_mutex_lock(&g_alloc.lock);
  dev_alloc *d = dev_of(device);
  if (!d || (!d->lru_head && !d->unready_bytes)) {
    pthread_mutex_unlock(&g_alloc.lock);
    return;
  }
  uint64_t target = ++d->release_req;
  int start = poke_reclaimer(d);
  pthread_mutex_unlock(&g_alloc.lock);
  if (start && start_reclaimer(device) != 0) return;
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  uint64_t ms = mc_config()->allocator_oom_wait_ms;
  deadline.tv_sec += (time_t)(ms / 1000);
  deadline.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (deadline.tv_nsec >= 1000000000L) {
    deadline.tv_sec++;
    deadline.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&g_alloc.lock);
  while (d->release_done < target) {
    if (pthread_cond_timedwait(&d->done, &g_alloc.lock, &deadline) == ETIMEDOUT) {
      MC_STAT_INC(alloc_oom_timeouts);
      break;
    }
  }
  pthread_mutex_unlock(&g_alloc.lock);
}

/* ---- entry points ---- */

mc_status mc_alloc_release_all(uint64_t *released) {
  uint64_t before = __atomic_load_n(&mc_stats_values[MC_STAT_alloc_releases], __ATOMIC_RELAXED);
  mc_status first = MC_OK;
  for (int i = 0; i < MC_ALLOC_MAX_DEVICES; ++i) {
    pthread_mutex_lock(&g_alloc.lock);
    dev_alloc *d = g_alloc.devs[i];
    uint64_t upto = d ? d->free_seq : 0;
    int pending = d && d->pend_head;
    pthread_mutex_unlock(&g_alloc.lock);
    if (!d) continue;
    CUresult r = 1;
    if (pending) { /* as the stock cuMemFree would, wait for the device first */
      mc_ctx_scope scope;
      if (!MC_FAILED(mc_ctx_enter(i, &scope))) {
        r = mc_cu.cuCtxSynchronize();
        mc_ctx_leave(&scope);
      }
    }
    mc_block *list = NULL;
    pthread_mutex_lock(&g_alloc.lock);
    detach_ready(d, 0, 1, &list);
    if (r == 0) detach_pending(d, upto, 1, &list);
    pthread_mutex_unlock(&g_alloc.lock);
    mc_status st = release_list(list);
    if (MC_FAILED(st) && !MC_FAILED(first)) first = st;
  }
  if (released)
    *released =
        __atomic_load_n(&mc_stats_values[MC_STAT_alloc_releases], __ATOMIC_RELAXED) - before;
  return first;
}

mc_status mc_alloc_get(int device, uint64_t bytes, const void *stream_key, int host_shared,
                       void **out, int *uncleared) {
  *out = NULL;
  *uncleared = 0;
  mc_status st = mc_runtime_init();
  if (MC_FAILED(st)) return st;
  if (device < 0 || device >= mc_device_count() || device >= MC_ALLOC_MAX_DEVICES)
    return MC_FAIL("cuDeviceGet", MC_E_BAD_DEVICE);
  const mc_config_t *cfg = mc_config();
  uint64_t cap = cfg->allocator_cache_bytes;
  uint64_t size = 0;
  int cls = size_class(bytes, &size);
  if (cls < 0 || size > cap) {
    cls = -1; /* never cached: allocated at its exact size */
    size = bytes;
  }
  if (cls >= 0) {
    const void *key = (cfg->allocator_ordered && !host_shared) ? stream_key : NULL;
    int ordered = 0;
    pthread_mutex_lock(&g_alloc.lock);
    dev_alloc *d = dev_of(device);
    mc_block *b = d ? take_locked(d, host_shared ? 1 : 0, cls, key, &ordered) : NULL;
    pthread_mutex_unlock(&g_alloc.lock);
    if (b) {
      MC_STAT_INC(alloc_hits);
      if (ordered) MC_STAT_INC(alloc_ordered_hits);
      mc_stat_add(MC_STAT_alloc_bytes_in_use, (int64_t)b->bytes);
      *uncleared = ordered;
      *out = (void *)(uintptr_t)b->ptr;
      return MC_OK;
    }
  }
  MC_STAT_INC(alloc_misses);
  CUdeviceptr p = 0;
  st = driver_alloc(device, host_shared, size, &p);
  if (st.result == MC_CUDA_ERROR_OUT_OF_MEMORY) {
    MC_STAT_INC(alloc_oom_retries);
    oom_release(device);
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

mc_status mc_alloc_put(void *ptr, const void *stream_key) {
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
  dev_alloc *d = dev_of(b->device);
  if (b->cls < 0 || !d) { /* cls >= 0 only for blocks no bigger than the cap (mc_alloc_get) */
    pthread_mutex_unlock(&g_alloc.lock);
    return drop_block(b); /* the stock cuMemFree (waits for the device, as stock) */
  }
  int bdev = b->device;
  if (stream_key) {
    /* Freed on a stream: no driver call; the reclaimer makes it ready once the device has
     * finished everything enqueued before this free. */
    pending_insert(d, b, stream_key);
    int start = poke_reclaimer(d);
    pthread_mutex_unlock(&g_alloc.lock);
    if (start && start_reclaimer(bdev) != 0) {
      /* No thread: do its round here, waiting for the device as the stock cuMemFree would. */
      mc_ctx_scope scope;
      if (!MC_FAILED(mc_ctx_enter(bdev, &scope))) {
        reclaim_round(bdev, zero_stream(d));
        mc_ctx_leave(&scope);
      }
    }
    return MC_OK;
  }
  pthread_mutex_unlock(&g_alloc.lock);

  /* The NULL stream: the stock cuMemFree waits for the device; so do we, then clear the block
   * and it is ready at once. */
  mc_ctx_scope scope;
  st = mc_ctx_enter(bdev, &scope);
  if (MC_FAILED(st)) return drop_block(b);
  int bad = mc_cu.cuCtxSynchronize() != 0;
  if (!bad && mc_config()->allocator_zero) {
    b->lnext = NULL;
    bad = clear_blocks(b, zero_stream(d)) != 0;
  }
  mc_ctx_leave(&scope);
  if (bad) return drop_block(b);
  mc_block *victims = NULL;
  pthread_mutex_lock(&g_alloc.lock);
  ready_insert(d, b);
  detach_ready(d, mc_config()->allocator_cache_bytes, 0, &victims);
  pthread_mutex_unlock(&g_alloc.lock);
  return victims ? release_list(victims) : MC_OK;
}

/* ---- fork ---- */

void mc_alloc_fork_prepare(void) { pthread_mutex_lock(&g_alloc.lock); }

void mc_alloc_fork_parent(void) { pthread_mutex_unlock(&g_alloc.lock); }

void mc_alloc_fork_child(void) {
  /* The parent's blocks belong to its driver context and its reclaimers did not come along:
   * forget them all (leaked, never touched) and start empty. No driver call. */
  g_alloc.table = NULL;
  g_alloc.nbuckets = g_alloc.count = 0;
  memset(g_alloc.devs, 0, sizeof g_alloc.devs);
  pthread_mutex_init(&g_alloc.lock, NULL); /* held by the forking thread: a fresh one */
  __atomic_store_n(&g_alloc.rounds, 0, __ATOMIC_SEQ_CST); /* rounds of threads left behind */
  __atomic_store_n(&mc_stats_values[MC_STAT_alloc_bytes_in_use], 0, __ATOMIC_RELAXED);
  __atomic_store_n(&mc_stats_values[MC_STAT_alloc_bytes_cached], 0, __ATOMIC_RELAXED);
  __atomic_store_n(&mc_stats_values[MC_STAT_alloc_bytes_pending], 0, __ATOMIC_RELAXED);
}

/* ---- faults (issue 19 item 5): a device's primary context was reset (context.h) ----
 * Every block of the device leaves the block table and its lists: cached and pending ones are
 * forgotten (never handed out or freed again: the memory died with the context; the records
 * leak), live ones too, so the program's later mgpuMemFree of one goes to the driver as stock's
 * does (and reports what stock reports). Blocks a reclaimer round is clearing are left to it (the
 * clearing fails in the dead context: they are lost, never reused). The device's clearing stream
 * is forgotten; NULL-stream frees make a new one. No driver call. */
void mc_alloc_forget_device(int device) {
  pthread_mutex_lock(&g_alloc.lock);
  dev_alloc *d = (device >= 0 && device < MC_ALLOC_MAX_DEVICES) ? g_alloc.devs[device] : NULL;
  if (d && g_alloc.table) {
    for (size_t i = 0; i < g_alloc.nbuckets; ++i) {
      for (mc_block *b = g_alloc.table[i], *next; b; b = next) {
        next = b->hnext;
        if (b->device != device || b->state == B_CLEARING) continue;
        if (b->state == B_CACHED) ready_unlink(d, b);
        if (b->state == B_PENDING) {
          pending_unlink(d, b);
          unready_done(d, b);
        }
        table_remove(b);
        b->state = B_FREEING; /* off every list, owned by nobody */
      }
    }
    d->zero_stream = NULL;
  }
  pthread_mutex_unlock(&g_alloc.lock);
}
