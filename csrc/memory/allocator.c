/* allocator.c - the caching allocator behind mgpuMemAlloc / mgpuMemFree (see allocator.h), with
 * its per-device reclaimer thread.
 *
 * Block life: LIVE (handed out) -> freed with the NULL stream: the caller waits for the device
 * (cuCtxSynchronize in the caller's thread and mode, where the stock cuMemFree waits) and enqueues
 * its clearing memset without waiting -> ZEROING (until a later call proves the memset done, see
 * zeroing_insert) -> CACHED (ready, in a bin and the LRU list); freed on a stream: PENDING (in the device's pending
 * list, oldest first, and a pending bin) -> the reclaimer takes the ones freed before its round's
 * fence: CLEARING (on its own list) -> CACHED. FREEING: on its way back to the driver (no longer in
 * the block table). An ordered allocation (opt-in) may take a PENDING block back to LIVE.
 *
 * Idleness without a device-wide wait (issue 19). cuCtxSynchronize invalidates every stream capture
 * of the process in every capture mode (H100), so the library never calls it on its own
 * initiative. A block freed on a stream may still be used by work enqueued before the free; the
 * reclaimer proves that work finished with events: a round reads the device's free sequence E, then
 * records one event (its own, reused) on every driver stream of the library's pools that may have
 * work (mc_pool_for_each_stream: bound and draining streams; idle ones have none) and on the legacy
 * NULL stream of the device's primary context (which also covers every blocking stream of that
 * context), waits for them (cuEventSynchronize), and then the pending blocks numbered <= E are
 * idle. A block freed on a stream the library did not create (a foreign stream: another library's,
 * CU_STREAM_PER_THREAD) gets its own event, recorded on that stream at the free (if the stream is
 * being captured, or the record fails, the free is the stock cuMemFree instead). A stream that is
 * being captured (cuStreamIsCapturing; for the legacy stream also its "implicit" error) gets no
 * event: the round is put off (1 ms) rather than touch a capture. The boundary: work on a foreign
 * non-blocking stream that uses the block and is *not* the free's stream (a buffer handed to
 * another library's stream and freed, on another stream, before that work finished) is not covered
 * (the stock cuMemFree would have waited for it); MGPU_CACHED_STOCK_SYNC=1 restores that wait.
 *
 * Reclaimer (one thread per device, started on the first stream free of that device or a release
 * request, detached, every signal blocked but the synchronous faults (SIGSEGV, SIGBUS, SIGFPE,
 * SIGILL: a crash reaches the program's handlers), its capture mode RELAXED for its whole life, the device's
 * primary context current): while blocks are pending or a release is asked it runs rounds. A round
 * woken by a free on a stream the library enqueued work on and has not synchronised since (the
 * free's `busy` hint, pool.h) first gathers the frees that follow for
 * MGPU_CACHED_ALLOCATOR_RECLAIM_US (default 50 us, its timer slack 1 us; never for a release
 * request): a loop that frees while its kernels run then meets one round per gathering time, not
 * one per free, and its kernels meet fewer of the rounds' memsets (the allocating async step:
 * 1.03-1.09x the tree before issue 19 with a round at every free, 0.97-1.00x so, runs N82-N98).
 * A free on a stream without such work (a program that waited for its work before it
 * freed) gets its round at once: a fixed gathering made MLIR's alloc_loop (host_shared alloc,
 * kernel, host read, free, every step) 1.3-1.5x slower, with clearing off too, for a reason not
 * pinned down (not the order blocks are reused in: benchmarks/managed_rotation_probe.c), and
 * gathering until the rounds' fences found the device idle kept part of that (runs N84-N90).
 * A round: fence, then clears the idle blocks (cuMemsetD32Async on the device's clearing stream,
 * non-blocking, made when the thread is started and shared with NULL-stream frees, +
 * cuStreamSynchronize of that idle stream: only memsets wait) and makes them ready; when a
 * release was asked, or the device is "lean" (below the headroom, see below), it gives them back
 * instead. If the fence or the clearing fails, the blocks are never reused (forgotten, counted in
 * alloc_lost). Sitting in
 * cuEventSynchronize behind a kernel that waits for the host is harmless: no program thread waits
 * for it except an out-of-memory allocation that needs pending or non-pool blocks, for at most
 * MGPU_CACHED_ALLOCATOR_OOM_WAIT_MS. At exit it makes no new driver call (alloc_at_exit runs before
 * the driver's own exit handler).
 *
 * Memory goes back without a device-wide wait. With one device and the driver's memory pool entry
 * points (CUDA 11.2+; not HIP, not older drivers), cached-size device blocks come from a driver
 * memory pool of the device (made lazily) unless the device is lean (the pool reserves physical
 * memory in chunks: near capacity a small pool allocation fails where cuMemAlloc succeeds, so a
 * lean device, and a pool allocation out of memory, use cuMemAlloc; the headroom is checked
 * before a device's first driver allocation and before each while lean, pre_alloc_headroom): cuMemAllocFromPoolAsync on the clearing stream + its
 * synchronisation; given back with cuMemFreeAsync on the clearing stream + its synchronisation +
 * cuMemPoolTrimTo(pool, 0): no wait for the program's work (cuMemFree waits for the whole device,
 * ~1 s behind an unrelated 1 s kernel on the H100). All those calls run in relaxed mode. Such
 * memory cannot be exported with cuIpcGetMemHandle (the mgpu ABI exports nothing; a program that
 * passes an mgpuMemAlloc pointer to cuIpcGetMemHandle must set MGPU_CACHED_ALLOCATOR=0). With
 * several devices cuMemAlloc is kept (pool memory ignores cuCtxEnablePeerAccess). Blocks bigger
 * than the cache (never cached) and host_shared blocks (managed memory cannot come from a pool) are
 * cuMemAlloc / cuMemAllocManaged blocks: an allocation never waits for their cuMemFree, which the
 * reclaimer makes (out of memory, headroom) or the freeing thread right after its own device wait.
 *
 * Headroom (another CUDA user in the process must not fail for memory the cache keeps): the
 * library cannot see other users' allocations, so it asks the driver (cuMemGetInfo, ~6 us, only
 * when it matters: at a driver allocation, in a reclaimer round or at a free, when what the cache
 * holds more and the driver allocations made since the last check could have used up the margin
 * that check saw, or 1 ms after it; headroom_due; a reclaimer round already after 0.5 ms, so
 * that a loop's frees find a fresh check while rounds run). When the device's free memory
 * minus what the cache holds is below MGPU_CACHED_ALLOCATOR_HEADROOM percent (default 25) of its
 * total, the device becomes lean: its ready blocks are given back at once (pool: no wait), the
 * reclaimer gives back the pending ones as it proves them idle, and every free is the stock one
 * (lean_free: the caller waits for the device where stock's cuMemFree waits, then the block and
 * every block that wait proved idle go back at once), until a later check finds room. Near
 * capacity the library thus behaves like the stock wrapper: another user allocating right after
 * a free (or after the synchronisation that follows a stream free) finds the memory.
 *
 * Locking rule: g_alloc.lock guards the block table (every block the allocator made and has not
 * given back to the driver, found by address) and every field of every device (bins, lists, byte
 * counts, sequence numbers, release requests, the reclaimer flag, the pool, the headroom state);
 * each device's condition variables are used with it. No driver call is made with it held. A
 * device's round_lock serialises rounds (its fence events) and is held across their driver calls
 * only (never together with g_alloc.lock while waiting). mc_pool_live_kind is never called here
 * (memory.c decides which streams may be followed in order and which are foreign). One read goes
 * without the lock: may_take's look at a device pointer and the heads of a class's bins, written
 * (under the lock) with atomic stores; it only decides whether an allocation looks in the cache.
 */
#include "memory/allocator.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "platform/capture.h"
#include "support/config.h"
#include "platform/context.h"
#include "platform/cuda_api.h"
#include "platform/driver.h"
#include "streams/pool.h"
#include "support/stats.h"
#include "support/thread.h"

#define MC_ALLOC_MAX_DEVICES 64
#define MC_ALLOC_CLASSES 224     /* size classes: 4 per power of two from 512 B up to 2^60 */
#define MC_ALLOC_ORDERED_SCAN 16 /* pending blocks of a class looked at by an ordered allocation */

typedef enum { B_LIVE = 1, B_FREEING, B_PENDING, B_CLEARING, B_CACHED, B_ZEROING } block_state;

typedef struct mc_block {
  CUdeviceptr ptr;        /* the driver allocation; immutable */
  uint64_t bytes;         /* its size (the class size, or the exact size when cls < 0); immutable */
  int16_t device;         /* device ordinal; immutable */
  int8_t managed;         /* 1: cuMemAllocManaged; immutable */
  int8_t pooled;          /* 1: from the device's driver memory pool; immutable */
  int16_t cls;            /* size class, -1: never cached; immutable */
  uint64_t work_mark;     /* LIVE, managed: work_count() read before it was handed out (a
                             driver allocation: set before publication; a cached one: set under
                             the lock as it is taken) */
  uint8_t state;          /* block_state; under the lock */
  const void *key;        /* PENDING: the free's stream key (compared, never used); under the lock */
  uint64_t seq;           /* PENDING/CLEARING: the device's free sequence number at the free;
                             ZEROING: its clearing ticket (zero_tick after its memset) */
  CUevent ev;             /* PENDING/CLEARING: recorded on the free's foreign stream at the free,
                             or NULL; owned (back to the device's spare events when done) */
  struct mc_block *hnext; /* block table chain; under the lock */
  struct mc_block *bprev, *bnext; /* CACHED: its bin; PENDING: its pending bin; ZEROING: its
                                     zeroing bin; under the lock */
  struct mc_block *lprev, *lnext; /* CACHED: the LRU list (oldest first); PENDING: the pending
                                     list (oldest first); ZEROING: the zeroing list (lowest
                                     ticket first); CLEARING/FREEING: a private batch list
                                     (lnext only, owned by the thread that detached it) */
} mc_block;

typedef struct dev_alloc {
  mc_block *bins[2][MC_ALLOC_CLASSES];  /* [managed][class]: ready blocks, lowest address first */
  mc_block *lru_head, *lru_tail;        /* ready blocks of both kinds, least recently freed first */
  uint64_t cached_bytes;                /* sum of the ready blocks' sizes */
  mc_block *pbins[2][MC_ALLOC_CLASSES]; /* [managed][class]: pending blocks, last freed first */
  mc_block *pend_head, *pend_tail;      /* pending blocks, lowest sequence number first */
  uint64_t unready_bytes;               /* PENDING + CLEARING + ZEROING bytes */
  mc_block *zbins[2][MC_ALLOC_CLASSES]; /* [managed][class]: ZEROING blocks */
  mc_block *zero_head, *zero_tail;      /* ZEROING blocks, lowest ticket first */
  uint64_t zeroing_bytes;               /* ZEROING bytes (counted against the cap) */
  uint64_t zero_tick;                   /* ticket of the last memset enqueued by a NULL free */
  uint64_t free_seq;                    /* sequence number of the last stream free */
  int reclaimer;                        /* 1 once its thread was started */
  int gather;                           /* a free since the reclaimer last looked came on a stream
                                           that may still run work (mc_alloc_put's `busy`); lock */
  pthread_cond_t wake;                  /* the reclaimer waits here for work */
  pthread_cond_t done;                  /* broadcast when a release request is done (monotonic) */
  uint64_t release_req, release_done;   /* release requests made / served (out of memory) */
  CUstream zero_stream;                 /* blocks are cleared on it, by NULL-stream frees and
                                           the reclaimer (made lazily, owned, never destroyed) */
  CUmemoryPool mempool;                 /* the device's driver memory pool, or NULL */
  int mempool_state;                    /* 0 not tried, 1 made (mempool), -1 none */
  CUevent *spare_ev;                    /* per-block events to reuse (owned array, owned events) */
  size_t nspare, capspare;
  int lean;                             /* below the headroom: proven blocks go back, not cached;
                                           frees are stock's (lean_free), allocations skip the
                                           pool and re-check the headroom */
  int checked;                          /* a headroom check was made */
  uint64_t check_held;                  /* cached + unready bytes at the last check */
  uint64_t check_margin;                /* free - held - reserve at the last check (0: below) */
  uint64_t check_ns;                    /* CLOCK_MONOTONIC ns of the last check */
  uint64_t check_alloc;                 /* bytes taken from the driver since the last check */
  pthread_mutex_t round_lock;           /* serialises rounds; guards fev (see the locking rule) */
  CUevent *fev;                         /* fence events, one per stream of a round (owned) */
  size_t nfev;
} dev_alloc;

static struct {
  pthread_mutex_t lock;                    /* see the locking rule above */
  mc_block **table;                        /* block table: chained hash by address */
  size_t nbuckets, count;
  dev_alloc *devs[MC_ALLOC_MAX_DEVICES];   /* allocated on first use, never freed; stored
                                              atomically (may_take reads it unlocked) */
  int exiting;                             /* atomic: set at exit (alloc_at_exit) */
  int rounds;                              /* atomic: reclaimer rounds running now */
  mc_block *spare;                         /* records of freed blocks kept for the next
                                              allocations (through lnext); under the lock */
  int nspare;
} g_alloc = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, {NULL}, 0, 0, NULL, 0};

/* Block records are kept for reuse (at most SPARE_BLOCKS): an allocation that calls the driver
 * takes one in the lock section it holds anyway, instead of a calloc, and a free that lets go of
 * its block (the stock free of an untouched one) gives it back there, instead of a free. */
#define SPARE_BLOCKS 64

/* A zeroed record: a kept one, or NULL when none is kept (the caller callocs one). Lock held. */
static mc_block *spare_take_locked(void) {
  mc_block *b = g_alloc.spare;
  if (!b) return NULL;
  g_alloc.spare = b->lnext;
  g_alloc.nspare--;
  memset(b, 0, sizeof *b);
  return b;
}

/* The record of a block no longer in the table: kept, or freed beyond SPARE_BLOCKS. Lock held. */
static void spare_put_locked(mc_block *b) {
  if (g_alloc.nspare >= SPARE_BLOCKS) {
    free(b);
    return;
  }
  b->lnext = g_alloc.spare;
  g_alloc.spare = b;
  g_alloc.nspare++;
}

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
    pthread_mutex_init(&d->round_lock, NULL);
    __atomic_store_n(&g_alloc.devs[device], d, __ATOMIC_RELEASE); /* may_take reads it unlocked */
  }
  return g_alloc.devs[device];
}

/* Link a block into a bin (last freed first). A bin's head is stored atomically: may_take reads
 * it without the lock. */
static void bin_push(mc_block **head, mc_block *b) {
  b->bprev = NULL;
  b->bnext = *head;
  if (*head) (*head)->bprev = b;
  __atomic_store_n(head, b, __ATOMIC_RELAXED);
}

static void bin_unlink(mc_block **head, mc_block *b) {
  if (b->bprev) b->bprev->bnext = b->bnext;
  else __atomic_store_n(head, b->bnext, __ATOMIC_RELAXED);
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

/* Link a ready block into its bin in address order (lowest first) among the first READY_SORTED
 * blocks, after them beyond that. Which ready block an allocation gets does not matter for
 * correctness; the lowest address makes a loop's allocations get the same blocks in the same
 * order each time round whatever order the reclaimer readied them in (as PyTorch's allocator
 * prefers the lowest address of a size), so the graph path's execs keep their argument values
 * (graph_launch.h) instead of being updated at every launch. */
#define READY_SORTED 64
static void bin_insert_sorted(mc_block **head, mc_block *b) {
  mc_block *prev = NULL, *at = *head;
  for (int n = 0; at && at->ptr < b->ptr && n < READY_SORTED; ++n) {
    prev = at;
    at = at->bnext;
  }
  if (!prev) {
    bin_push(head, b);
    return;
  }
  b->bprev = prev;
  b->bnext = at;
  prev->bnext = b;
  if (at) at->bprev = b;
}

/* A cleared block becomes ready: its bin (address order) and the LRU tail. */
static void ready_insert(dev_alloc *d, mc_block *b) {
  bin_insert_sorted(&d->bins[b->managed][b->cls], b);
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

/* ZEROING (issue 21): a block freed with the NULL stream, proven idle by that free's device-wide
 * wait, whose clearing memset was enqueued on the clearing stream and not waited for. It is
 * handed out only once a later driver call that started after the memset was enqueued proves it
 * complete: the next NULL-stream free's cuCtxSynchronize (which the stock cuMemFree makes anyway),
 * a cuStreamQuery of the clearing stream by an allocation that finds no ready block of its class,
 * or a synchronisation of that stream (pool allocation, reclaimer round). Tickets are taken after
 * the memset was enqueued, and a prover reads the last ticket before its call, so every ticket up
 * to the one read is covered. The blocks count as unready bytes (headroom) and cached bytes
 * (statistics). */
static void zeroing_insert(dev_alloc *d, mc_block *b) {
  b->seq = ++d->zero_tick;
  bin_push(&d->zbins[b->managed][b->cls], b);
  list_append(&d->zero_head, &d->zero_tail, b);
  d->unready_bytes += b->bytes;
  d->zeroing_bytes += b->bytes;
  b->state = B_ZEROING;
  mc_stat_add(MC_STAT_alloc_bytes_cached, (int64_t)b->bytes);
}

static void zeroing_unlink(dev_alloc *d, mc_block *b) {
  bin_unlink(&d->zbins[b->managed][b->cls], b);
  list_unlink(&d->zero_head, &d->zero_tail, b);
  d->unready_bytes -= b->bytes;
  d->zeroing_bytes -= b->bytes;
  mc_stat_add(MC_STAT_alloc_bytes_cached, -(int64_t)b->bytes);
}

/* The memsets of tickets <= `upto` are proven complete: their blocks become ready. */
static void zeroing_proven(dev_alloc *d, uint64_t upto) {
  while (d->zero_head && d->zero_head->seq <= upto) {
    mc_block *b = d->zero_head;
    zeroing_unlink(d, b);
    ready_insert(d, b);
  }
}

/* Detach ZEROING blocks for release (all, or the pool blocks only), like detach_ready: they are
 * idle (their memset is on the clearing stream, which cuMemFreeAsync there follows and cuMemFree
 * waits for). */
static void detach_zeroing(dev_alloc *d, int all, mc_block **list) {
  for (mc_block *b = d->zero_head, *next; b; b = next) {
    next = b->lnext;
    if (!all && !b->pooled) continue;
    zeroing_unlink(d, b);
    table_remove(b);
    b->state = B_FREEING;
    b->lnext = *list;
    *list = b;
  }
}

/* Detach ready blocks (oldest first) for release, onto *list through lnext: all of them, or while
 * the device keeps more than `keep` bytes (ZEROING ones included). They leave the block table. */
static void detach_ready(dev_alloc *d, uint64_t keep, int all, mc_block **list) {
  while (d->lru_head && (all || d->cached_bytes + d->zeroing_bytes > keep)) {
    mc_block *b = d->lru_head;
    ready_unlink(d, b);
    table_remove(b);
    b->state = B_FREEING;
    b->lnext = *list;
    *list = b;
  }
}

/* Detach the pending blocks freed with sequence number <= `upto` (a prefix of the pending list),
 * as CLEARING, or (release) as FREEING out of the block table; onto *list through lnext. A
 * release keeps the blocks waiting for a foreign stream's event (b->ev) pending: that stream may
 * belong to another context, which the caller's device wait did not cover. */
static void detach_pending(dev_alloc *d, uint64_t upto, int release, mc_block **list) {
  for (mc_block *b = d->pend_head, *next; b && b->seq <= upto; b = next) {
    next = b->lnext;
    if (release && b->ev) continue;
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

/* Whether take_locked (or the zeroing query before it) could find a block of class cls on
 * `device`, read without the lock from the heads of the bins it looks at. An allocation that
 * finds them empty skips the locked look-up (a miss: the driver's allocation, as stock makes). A
 * head read empty while another thread frees a block of the class only makes this allocation
 * the miss it would have been a moment earlier. `device` is one alloc_device_ok accepted. */
static int may_take(int device, int managed, int cls, const void *key) {
  dev_alloc *d = __atomic_load_n(&g_alloc.devs[device], __ATOMIC_ACQUIRE);
  if (!d) return 0; /* nothing cached on it yet */
  return __atomic_load_n(&d->bins[managed][cls], __ATOMIC_RELAXED) ||
         __atomic_load_n(&d->zbins[managed][cls], __ATOMIC_RELAXED) ||
         (key && !managed && __atomic_load_n(&d->pbins[0][cls], __ATOMIC_RELAXED));
}

/* ---- driver calls (no lock) ---- */

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int have_pool_api(void) {
  return mc_cu.cuMemPoolCreate && mc_cu.cuMemPoolTrimTo && mc_cu.cuMemAllocFromPoolAsync &&
         mc_cu.cuMemFreeAsync;
}

/* The stream `device`'s blocks are cleared on (and pool memory allocated and freed on), made on
 * first use (its context current); NULL (the legacy stream) if it cannot be made. */
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

/* The device's memory pool, made on first use (its context current), or NULL: no pool entry
 * points, several devices (pool memory ignores peer access), or cuMemPoolCreate failed. */
static CUmemoryPool device_pool(int device, dev_alloc *d) {
  pthread_mutex_lock(&g_alloc.lock);
  int state = d->mempool_state;
  CUmemoryPool pool = d->mempool;
  pthread_mutex_unlock(&g_alloc.lock);
  if (state) return pool;
  pool = NULL;
  if (have_pool_api() && mc_device_count() == 1 && zero_stream(d)) {
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = MC_CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = MC_CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = device;
    mc_relaxed rx;
    mc_relaxed_enter(&rx);
    if (mc_cu.cuMemPoolCreate(&pool, &props) != 0) pool = NULL;
    mc_relaxed_leave(&rx);
  }
  pthread_mutex_lock(&g_alloc.lock);
  if (!d->mempool_state) { /* a pool made by a racing thread is kept; ours is leaked (rare) */
    d->mempool = pool;
    d->mempool_state = pool ? 1 : -1;
  }
  pool = d->mempool;
  pthread_mutex_unlock(&g_alloc.lock);
  return pool;
}

/* Allocate a block: device blocks of a cached size from the device's pool where there is one
 * (*pooled = 1), else the stock calls. */
static mc_status driver_alloc(int device, int managed, int cached, uint64_t bytes, CUdeviceptr *p,
                              int *pooled) {
  *pooled = 0;
  mc_ctx_scope scope;
  mc_status st = mc_ctx_enter(device, &scope);
  if (MC_FAILED(st)) return st;
  CUresult r;
  /* Near capacity (lean) no pool: the pool reserves physical memory in chunks larger than a small
   * block (H100: a 4 KiB block failed with 16 MiB free), memory stock's cuMemAlloc leaves to
   * others; and lean frees wait for the device anyway. A pool allocation that runs out falls
   * back to cuMemAlloc for the same reason. */
  dev_alloc *d = NULL;
  int lean = 0;
  if (!managed && cached) { /* only a cached-size device block may come from the pool */
    pthread_mutex_lock(&g_alloc.lock);
    d = dev_of(device);
    lean = d && d->lean;
    pthread_mutex_unlock(&g_alloc.lock);
  }
  CUmemoryPool pool = (d && !lean) ? device_pool(device, d) : NULL;
  if (pool) {
    CUstream zs = zero_stream(d);
    pthread_mutex_lock(&g_alloc.lock);
    uint64_t upto = d->zero_tick;
    pthread_mutex_unlock(&g_alloc.lock);
    mc_relaxed rx;
    mc_relaxed_enter(&rx);
    r = mc_cu.cuMemAllocFromPoolAsync(p, bytes, pool, zs);
    if (r == 0 && mc_cu.cuStreamSynchronize(zs) != 0) {
      mc_cu.cuMemFreeAsync(*p, zs); /* not known ready: given back (stream ordered) */
      r = MC_CUDA_ERROR_OUT_OF_MEMORY;
    }
    mc_relaxed_leave(&rx);
    if (r == 0) {
      mc_ctx_leave(&scope);
      pthread_mutex_lock(&g_alloc.lock); /* the clearing stream was synchronised: ZEROING proven */
      zeroing_proven(d, upto);
      pthread_mutex_unlock(&g_alloc.lock);
      *pooled = 1;
      return MC_OK;
    }
    if (r != MC_CUDA_ERROR_OUT_OF_MEMORY) {
      mc_ctx_leave(&scope);
      return MC_FAIL("cuMemAllocFromPoolAsync", r);
    }
  }
  r = managed ? mc_cu.cuMemAllocManaged(p, bytes, MC_CU_MEM_ATTACH_GLOBAL)
              : mc_cu.cuMemAlloc(p, bytes);
  mc_ctx_leave(&scope);
  if (r != 0) return MC_FAIL(managed ? "cuMemAllocManaged" : "cuMemAlloc", r);
  return MC_OK;
}

/* cuMemFree in `device`'s context (the stock call, in the caller's mode). */
static mc_status driver_free(int device, CUdeviceptr p) {
  mc_ctx_scope scope;
  mc_status st = mc_ctx_enter(device, &scope);
  if (MC_FAILED(st)) return st;
  CUresult r = mc_cu.cuMemFree(p);
  mc_ctx_leave(&scope);
  return r ? MC_FAIL("cuMemFree", r) : MC_OK;
}

/* Give detached (FREEING) blocks back to the driver. Every one of them is idle (cleared, or proven
 * by a fence). Pool blocks: cuMemFreeAsync on the clearing stream + its synchronisation + trim,
 * no wait for the program's work; others: cuMemFree (waits for the device: only where the caller
 * may wait, see the callers). All in relaxed mode (the library's own initiative). */
static mc_status release_list(mc_block *list) {
  mc_status first = MC_OK;
  for (int pass = 0; pass < 2; ++pass) { /* pool blocks first, per device */
    for (int dev = 0; dev < MC_ALLOC_MAX_DEVICES; ++dev) {
      int any = 0;
      for (mc_block *b = list; b && !any; b = b->lnext) any = b->device == dev && b->pooled == !pass;
      if (!any) continue;
      pthread_mutex_lock(&g_alloc.lock);
      dev_alloc *d = g_alloc.devs[dev];
      CUmemoryPool pool = d ? d->mempool : NULL;
      CUstream zs = d ? d->zero_stream : NULL;
      pthread_mutex_unlock(&g_alloc.lock);
      mc_ctx_scope scope;
      mc_status st = mc_ctx_enter(dev, &scope);
      if (MC_FAILED(st)) {
        if (!MC_FAILED(first)) first = st;
        continue; /* left allocated (never reused) */
      }
      mc_relaxed rx;
      mc_relaxed_enter(&rx);
      for (mc_block *b = list; b; b = b->lnext) {
        if (b->device != dev || b->pooled != !pass) continue;
        CUresult r = b->pooled ? mc_cu.cuMemFreeAsync(b->ptr, zs) : mc_cu.cuMemFree(b->ptr);
        if (r && !MC_FAILED(first)) first = MC_FAIL(b->pooled ? "cuMemFreeAsync" : "cuMemFree", r);
        MC_STAT_INC(alloc_releases);
      }
      if (!pass && pool) {
        CUresult r = mc_cu.cuStreamSynchronize(zs);
        if (!r) r = mc_cu.cuMemPoolTrimTo(pool, 0);
        if (r && !MC_FAILED(first)) first = MC_FAIL("cuMemPoolTrimTo", r);
      }
      mc_relaxed_leave(&rx);
      mc_ctx_leave(&scope);
    }
  }
  for (mc_block *b = list, *next; b; b = next) {
    next = b->lnext;
    free(b);
  }
  return first;
}

/* Free a block that will not be cached (FREEING, still in the table): the stock cuMemFree, in the
 * caller's mode (for pool memory too: cuMemFree accepts it and waits for the device, as stock). */
static mc_status drop_block(mc_block *b) {
  pthread_mutex_lock(&g_alloc.lock);
  table_remove(b);
  pthread_mutex_unlock(&g_alloc.lock);
  mc_status st = driver_free(b->device, b->ptr);
  free(b);
  return st;
}

/* Clear blocks (a list through lnext) on `zs`, the device's context current: 0 on success. */
static int clear_blocks(mc_block *list, CUstream zs) {
  uint64_t bytes = 0;
  mc_relaxed rx;
  mc_relaxed_enter(&rx);
  int bad = 0;
  for (mc_block *b = list; b && !bad; b = b->lnext) {
    if (exiting() || mc_cu.cuMemsetD32Async(b->ptr, 0, (size_t)(b->bytes / 4), zs) != 0) bad = 1;
    bytes += b->bytes;
  }
  if (!bad && mc_cu.cuStreamSynchronize(zs) != 0) bad = 1;
  mc_relaxed_leave(&rx);
  if (bad) return -1;
  mc_stat_add(MC_STAT_alloc_bytes_zeroed, (int64_t)bytes);
  return 0;
}

/* A block's own event goes back to the device's spare events (or is destroyed). Lock held for the
 * list; the destroy (rare) happens outside it by the caller's choice: here it is leaked instead. */
static void spare_event_locked(dev_alloc *d, CUevent e) {
  if (!e) return;
  if (d->nspare == d->capspare) {
    size_t n = d->capspare ? 2 * d->capspare : 16;
    CUevent *a = realloc(d->spare_ev, n * sizeof *a);
    if (!a) return; /* leaked: harmless */
    d->spare_ev = a;
    d->capspare = n;
  }
  d->spare_ev[d->nspare++] = e;
}

/* Forget blocks whose safety could not be established (never reused, never freed). Lock held. */
static void lose_blocks(dev_alloc *d, mc_block *list) {
  for (mc_block *b = list, *next; b; b = next) {
    next = b->lnext;
    unready_done(d, b);
    table_remove(b);
    spare_event_locked(d, b->ev);
    MC_STAT_INC(alloc_lost);
    free(b);
  }
}

/* ---- headroom ---- */

#define MC_ALLOC_CHECK_NS 1000000ull /* a free checks the headroom at most this often (1 ms) */

/* Whether the headroom must be checked now (lock held), `extra` bytes about to join the cache
 * counted as held, the last check being older than `period_ns` counting as due. */
static int headroom_due_within(dev_alloc *d, uint64_t extra, uint64_t period_ns) {
  if (!mc_config()->allocator_headroom || !mc_cu.cuMemGetInfo) return 0;
  if (!d->checked || d->lean) return 1; /* lean: until a check finds room again */
  uint64_t held = d->cached_bytes + d->unready_bytes + extra;
  /* the margin left at the last check, used up by what the cache holds more since and by the
   * driver allocations made since (each lowers the free memory by its size) */
  if (held + d->check_alloc > d->check_held + d->check_margin) return 1;
  return now_ns() - d->check_ns >= period_ns;
}

/* The program's threads (allocations, frees): due after MC_ALLOC_CHECK_NS. */
static int headroom_due(dev_alloc *d, uint64_t extra) {
  return headroom_due_within(d, extra, MC_ALLOC_CHECK_NS);
}

/* Check the headroom of `device` (its context current, no lock held): when the device's free
 * memory minus what the cache holds (and `extra` bytes about to join it) is below the reserve, make the device lean and detach its
 * ready blocks onto *victims (pool blocks only unless `all`: others need a device-wide wait) and
 * ask the reclaimer for a release when blocks are left (its start, if needed, via *start).
 * Returns this check's verdict (1: lean; 0 also when the driver did not answer), which a caller
 * acts on even if another thread's check has changed d->lean since: a free's check counts its
 * block (`extra`), the reclaimer's does not, so a round finishing in between must not turn a
 * near-capacity free into a cached one (the flake audit's interleaving). */
static int headroom_check(dev_alloc *d, int all, uint64_t extra, mc_block **victims, int *poke) {
  size_t freeb = 0, total = 0;
  mc_relaxed rx;
  mc_relaxed_enter(&rx);
  CUresult r = mc_cu.cuMemGetInfo(&freeb, &total);
  mc_relaxed_leave(&rx);
  MC_STAT_INC(alloc_headroom_checks);
  if (r != 0) return 0;
  uint64_t reserve = (uint64_t)total / 100 * mc_config()->allocator_headroom;
  pthread_mutex_lock(&g_alloc.lock);
  uint64_t held = d->cached_bytes + d->unready_bytes + extra;
  d->checked = 1;
  d->check_ns = now_ns();
  d->check_held = held;
  d->check_alloc = 0;
  int lean = (uint64_t)freeb < held + reserve;
  d->check_margin = lean ? 0 : (uint64_t)freeb - held - reserve;
  d->lean = lean;
  if (lean) {
    MC_STAT_INC(alloc_headroom_releases);
    for (mc_block *b = d->lru_head, *next; b; b = next) {
      next = b->lnext;
      if (!all && !b->pooled) continue;
      ready_unlink(d, b);
      table_remove(b);
      b->state = B_FREEING;
      b->lnext = *victims;
      *victims = b;
    }
    detach_zeroing(d, all, victims);
    if (d->lru_head && poke) { /* non-pool blocks: the reclaimer gives them back */
      d->release_req++;
      *poke = 1;
    }
  }
  pthread_mutex_unlock(&g_alloc.lock);
  return lean;
}

/* ---- the reclaimer ---- */

typedef struct fence_set {
  CUstream *s;
  size_t n, cap;
} fence_set;

static void fence_add(CUstream s, void *ctx) { /* under the pool's lock: no driver call */
  fence_set *f = ctx;
  if (f->n == f->cap) {
    size_t n = f->cap ? 2 * f->cap : 32;
    CUstream *a = realloc(f->s, n * sizeof *a);
    if (!a) {
      f->cap = (size_t)-1; /* marks the set incomplete */
      return;
    }
    f->s = a;
    f->cap = n;
  }
  if (f->cap != (size_t)-1) f->s[f->n++] = s;
}

/* 1 when `s` is being captured, or its status cannot be told (the legacy stream while a blocking
 * stream of its context is captured reports CUDA_ERROR_STREAM_CAPTURE_IMPLICIT). */
static int capture_blocks(CUstream s) {
  if (!mc_cu.cuStreamIsCapturing) return 0;
  CUstreamCaptureStatus st = MC_CU_STREAM_CAPTURE_STATUS_NONE;
  if (mc_cu.cuStreamIsCapturing(s, &st) != 0) return 1;
  return st != MC_CU_STREAM_CAPTURE_STATUS_NONE;
}

/* The fence of a round (device's context current, relaxed mode, round_lock held): 0 when every
 * piece of work enqueued before the call on the library's streams of the device and on its legacy
 * stream has completed (cuEventSynchronize); 1 to try again later (a stream is being captured);
 * -1 on failure. */
#define FENCE_PARKED 8 /* given-back streams a fence proves idle for the pool (pool.h) */
static int fence(int device, dev_alloc *d) {
  fence_set f = {NULL, 0, 0};
  /* the streams given back so far: noted before the set below is taken, so each is in it (or
   * left the draining list meanwhile, which mc_pool_parked_idle checks) */
  void *parked[FENCE_PARKED];
  uint32_t parks[FENCE_PARKED];
  size_t nparked = mc_pool_parked_streams(device, parked, parks, FENCE_PARKED);
  mc_pool_for_each_stream(device, fence_add, &f);
  if (f.cap == (size_t)-1) {
    free(f.s);
    return -1;
  }
  fence_add(NULL, &f); /* the legacy stream */
  if (f.cap == (size_t)-1) {
    free(f.s);
    return -1;
  }
  int rc = 0;
  if (d->nfev < f.n) {
    CUevent *a = realloc(d->fev, f.n * sizeof *a);
    if (!a) rc = -1;
    else {
      d->fev = a;
      while (d->nfev < f.n) {
        if (mc_cu.cuEventCreate(&d->fev[d->nfev], MC_CU_EVENT_DISABLE_TIMING) != 0) {
          rc = -1;
          break;
        }
        d->nfev++;
      }
    }
  }
  for (size_t i = 0; rc == 0 && i < f.n; ++i)
    if (capture_blocks(f.s[i])) rc = 1;
  for (size_t i = 0; rc == 0 && i < f.n; ++i)
    if (exiting() || mc_cu.cuEventRecord(d->fev[i], f.s[i]) != 0) rc = -1;
  for (size_t i = 0; rc == 0 && i < f.n; ++i)
    if (exiting() || mc_cu.cuEventSynchronize(d->fev[i]) != 0) rc = -1;
  free(f.s);
  /* every given-back stream noted above had an event recorded after its work: proven idle, so
   * the program's next synchronisation has no query to make for it (pool.h) */
  if (rc == 0) mc_pool_parked_idle(device, parked, parks, nparked);
  return rc;
}

/* One round for `device`, its context current on the calling thread, in relaxed mode: prove the
 * pending blocks freed before it idle (fence and their own events), then clear them and make them
 * ready, or, when a release was asked or the device is lean, give them back with every ready block.
 * `zs`: the stream to clear on. Returns 1 when the round was put off (a capture, or the context
 * was reset and not yet recovered), else 0. */
static int reclaim_round_(int device, CUstream zs);

static int reclaim_round(int device, CUstream zs) {
  __atomic_add_fetch(&g_alloc.rounds, 1, __ATOMIC_SEQ_CST); /* before the exiting test: see
                                                              alloc_at_exit */
  int later = 0;
  if (!exiting()) later = reclaim_round_(device, zs);
  __atomic_sub_fetch(&g_alloc.rounds, 1, __ATOMIC_SEQ_CST);
  return later;
}

/* At exit a round stops before its next driver call; its blocks stay where they are. */
static int reclaim_round_(int device, CUstream zs) {
  /* A reset context (by the program, in any thread): its streams and events are dead, and the
   * driver may crash on them (the reset class on the H100). Wait until the program's next call
   * finds the new context and forgets them (context.h); the blocks stay pending till then. */
  if (!mc_ctx_alive(device)) return 1;
  pthread_mutex_lock(&g_alloc.lock);
  dev_alloc *d = g_alloc.devs[device];
  uint64_t upto = d->free_seq;
  int pend = d->pend_head != NULL;
  pthread_mutex_unlock(&g_alloc.lock);
  int fr = 0;
  pthread_mutex_lock(&d->round_lock);
  if (pend) fr = fence(device, d);
  pthread_mutex_unlock(&d->round_lock);
  if (fr == 1) return 1;
  MC_STAT_INC(alloc_reclaims);
  uint64_t cap = mc_config()->allocator_cache_bytes;
  mc_block *batch = NULL, *victims = NULL;
  pthread_mutex_lock(&g_alloc.lock);
  uint64_t req = d->release_req;
  int release = req != d->release_done;
  detach_pending(d, upto, 0, &batch);
  if (fr != 0) {
    lose_blocks(d, batch); /* not proven finished: never reused */
    batch = NULL;
  }
  pthread_mutex_unlock(&g_alloc.lock);
  /* blocks freed on foreign streams: their own events */
  mc_block *bad = NULL, **pp = &batch;
  while (*pp) {
    mc_block *b = *pp;
    if (b->ev && (exiting() || mc_cu.cuEventSynchronize(b->ev) != 0)) {
      *pp = b->lnext;
      b->lnext = bad;
      bad = b;
    } else {
      pp = &b->lnext;
    }
  }
  int zero = mc_config()->allocator_zero;
  pthread_mutex_lock(&g_alloc.lock);
  lose_blocks(d, bad);
  for (mc_block *b = batch; b; b = b->lnext) {
    spare_event_locked(d, b->ev);
    b->ev = NULL;
  }
  int lean = d->lean;
  if (release || lean) { /* idle now: straight back to the driver */
    for (mc_block *b = batch; b; b = b->lnext) {
      unready_done(d, b);
      table_remove(b);
      b->state = B_FREEING;
    }
    victims = batch;
    batch = NULL;
    if (release) {
      detach_ready(d, 0, 1, &victims);
      detach_zeroing(d, 1, &victims);
    }
  }
  uint64_t zupto = d->zero_tick;
  pthread_mutex_unlock(&g_alloc.lock);
  int cleared = batch && zero && zs;
  int badclear = batch && zero && clear_blocks(batch, zs) != 0;
  pthread_mutex_lock(&g_alloc.lock);
  if (cleared && !badclear) zeroing_proven(d, zupto); /* the clearing stream was synchronised */
  if (badclear) {
    lose_blocks(d, batch);
  } else {
    for (mc_block *b = batch, *next; b; b = next) {
      next = b->lnext;
      unready_done(d, b);
      ready_insert(d, b);
    }
  }
  detach_ready(d, cap, 0, &victims);
  /* due: the margin used up, or half the program's period since the last check, so that while
   * rounds run (a loop that frees) the program's frees find a fresh check and make none of
   * their own (cuMemGetInfo: 5-30 us on the H100); the checks are as frequent as before */
  int check = headroom_due_within(d, 0, MC_ALLOC_CHECK_NS / 2);
  pthread_mutex_unlock(&g_alloc.lock);
  if (check) headroom_check(d, 1, 0, &victims, NULL);
  if (!exiting() && victims) release_list(victims);
  if (release) {
    pthread_mutex_lock(&g_alloc.lock);
    d->release_done = req;
    pthread_cond_broadcast(&d->done);
    pthread_mutex_unlock(&g_alloc.lock);
  }
  return 0;
}

static void *reclaimer_main(void *arg) {
  int device = (int)(intptr_t)arg;
#ifdef __linux__
  /* Its gathering sleep (MGPU_CACHED_ALLOCATOR_RECLAIM_US) lasts what the switch says: the
   * kernel's default timer slack for a thread (50 us) would add up to 50 us to each. */
  (void)prctl(PR_SET_TIMERSLACK, 1000ul, 0ul, 0ul, 0ul);
#endif
  mc_ctx_scope scope; /* the device's context stays current on this thread for its life */
  /* Its driver calls (cuCtxGetCurrent, cuCtxPushCurrent) count as a round too: a thread that
   * starts while the process exits makes none (seen under load: a call after the driver's own
   * exit handler had torn it down). */
  __atomic_add_fetch(&g_alloc.rounds, 1, __ATOMIC_SEQ_CST);
  int go = !exiting();
  if (go) {
    mc_relaxed rx; /* relaxed for the thread's whole life: every call is the library's own */
    mc_relaxed_enter(&rx);
    mc_ctx_enter(device, &scope);
  }
  __atomic_sub_fetch(&g_alloc.rounds, 1, __ATOMIC_SEQ_CST);
  if (!go) return NULL;
  pthread_mutex_lock(&g_alloc.lock);
  dev_alloc *d = g_alloc.devs[device];
  pthread_mutex_unlock(&g_alloc.lock);
  pthread_mutex_lock(&g_alloc.lock);
  for (;;) {
    while (!exiting() && !d->pend_head && d->release_req == d->release_done)
      pthread_cond_wait(&d->wake, &g_alloc.lock);
    if (exiting()) break;
    int release = d->release_req != d->release_done;
    int gather = d->gather; /* the frees since the last look: one on a stream still working? */
    d->gather = 0;
    pthread_mutex_unlock(&g_alloc.lock);
    unsigned long us = mc_config()->allocator_reclaim_us;
    if (us && !release && gather) { /* gather the frees that follow before the round */
      struct timespec t = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000L};
      nanosleep(&t, NULL);
      MC_STAT_INC(alloc_gathers);
    }
    /* the clearing stream, read each round: a context reset (context.h) forgets it */
    CUstream zs = zero_stream(d); /* made by start_reclaimer; NULL: the legacy stream */
    if (reclaim_round(device, zs)) { /* a capture in progress: later */
      MC_STAT_INC(alloc_rounds_deferred);
      struct timespec t = {0, 1000000L};
      nanosleep(&t, NULL);
    }
    pthread_mutex_lock(&g_alloc.lock);
  }
  pthread_mutex_unlock(&g_alloc.lock);
  return NULL;
}

/* Make sure `device`'s reclaimer runs and knows there is work. Lock held; returns what the
 * caller does after unlocking (poked): POKE_START, start the thread; POKE_SIGNAL, wake it. The
 * signal comes after the unlock, so the woken thread does not run straight into the lock the
 * caller still holds (its wait re-checks its condition under the lock: no wake-up is lost). */
enum { POKE_SIGNAL = 1, POKE_START = 2 };
static int poke_reclaimer(dev_alloc *d) {
  if (d->reclaimer) return POKE_SIGNAL;
  d->reclaimer = 1;
  return POKE_START;
}

static int start_reclaimer(int device);

/* After poke_reclaimer, the lock released: 1 when the thread was to start and could not. */
static int poked(int device, dev_alloc *d, int poke) {
  if (poke == POKE_SIGNAL) pthread_cond_signal(&d->wake);
  return poke == POKE_START && start_reclaimer(device) != 0;
}

/* Start the reclaimer thread (detached, every signal blocked but the synchronous faults:
 * thread.h). No lock held. 0 on success; on
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
  pthread_t t;
  int e = mc_thread_start(&t, &attr, reclaimer_main, (void *)(intptr_t)device); /* thread.h */
  pthread_attr_destroy(&attr);
  if (e) {
    pthread_mutex_lock(&g_alloc.lock);
    g_alloc.devs[device]->reclaimer = 0;
    pthread_mutex_unlock(&g_alloc.lock);
  }
  return e;
}

/* A round in the calling thread (no reclaimer thread could be started), in relaxed mode. */
static void round_here(int device, dev_alloc *d) {
  mc_ctx_scope scope;
  if (MC_FAILED(mc_ctx_enter(device, &scope))) return;
  mc_relaxed rx;
  mc_relaxed_enter(&rx);
  reclaim_round(device, zero_stream(d));
  mc_relaxed_leave(&rx);
  mc_ctx_leave(&scope);
}

/* Out of memory on `device`: give the pool blocks back here (no wait for the program's work);
 * when other ready blocks or pending ones remain, have the reclaimer give them back, waiting for it
 * at most MGPU_CACHED_ALLOCATOR_OOM_WAIT_MS (cuMemFree and the fence wait for work that may wait
 * for this very thread). Returns 0 when the cache held nothing of the device (nothing to retry
 * for). */
static int oom_release(int device) {
  mc_block *victims = NULL;
  pthread_mutex_lock(&g_alloc.lock);
  dev_alloc *d = dev_of(device);
  if (!d || (!d->lru_head && !d->unready_bytes)) {
    pthread_mutex_unlock(&g_alloc.lock);
    return 0;
  }
  detach_zeroing(d, 0, &victims);
  for (mc_block *b = d->lru_head, *next; b; b = next) {
    next = b->lnext;
    if (!b->pooled) continue;
    ready_unlink(d, b);
    table_remove(b);
    b->state = B_FREEING;
    b->lnext = victims;
    victims = b;
  }
  int more = d->lru_head || d->unready_bytes;
  pthread_mutex_unlock(&g_alloc.lock);
  if (victims) {
    release_list(victims);
    if (!more) return 1;
  }
  pthread_mutex_lock(&g_alloc.lock);
  uint64_t target = ++d->release_req;
  int start = poke_reclaimer(d);
  pthread_mutex_unlock(&g_alloc.lock);
  if (poked(device, d, start)) return victims != NULL;
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
  return 1;
}

/* 1 when every memset enqueued on `device`'s clearing stream so far has completed: one
 * cuStreamQuery (relaxed mode; the stream is the library's own and never captured). Never waits. */
static int zeroing_query(int device, dev_alloc *d) {
  pthread_mutex_lock(&g_alloc.lock);
  CUstream zs = d->zero_stream;
  pthread_mutex_unlock(&g_alloc.lock);
  if (!zs || exiting()) return 0;
  mc_ctx_scope scope;
  if (MC_FAILED(mc_ctx_enter(device, &scope))) return 0;
  mc_relaxed rx;
  mc_relaxed_enter(&rx);
  CUresult r = mc_cu.cuStreamQuery(zs);
  mc_relaxed_leave(&rx);
  mc_ctx_leave(&scope);
  return r == 0;
}

/* ---- entry points ---- */

mc_status mc_alloc_release_all(uint64_t *released) {
  uint64_t before = mc_stat_get(MC_STAT_alloc_releases);
  mc_status first = MC_OK;
  for (int i = 0; i < MC_ALLOC_MAX_DEVICES; ++i) {
    mc_block *list = NULL;
    pthread_mutex_lock(&g_alloc.lock);
    dev_alloc *d = g_alloc.devs[i];
    int start = 0;
    if (d) {
      detach_ready(d, 0, 1, &list);
      detach_zeroing(d, 1, &list);
      if (d->pend_head) { /* given back by the reclaimer once proven idle; not waited for */
        d->release_req++;
        start = poke_reclaimer(d);
      }
    }
    pthread_mutex_unlock(&g_alloc.lock);
    if (!d) continue;
    if (poked(i, d, start)) round_here(i, d);
    mc_status st = release_list(list);
    if (MC_FAILED(st) && !MC_FAILED(first)) first = st;
  }
  if (released)
    *released =
        mc_stat_get(MC_STAT_alloc_releases) - before;
  return first;
}

/* A headroom check now (no lock held; `extra`: bytes about to join the cache): a lean device's
 * ready pool blocks go back at once (no wait), and the reclaimer is asked to give back the rest
 * (non-pool ready blocks, pending ones as it proves them idle). Returns whether the device is
 * lean: by this check (which counted `extra`), or by a check another thread made since. */
static int headroom_now(int device, dev_alloc *d, uint64_t extra) {
  mc_block *victims = NULL;
  int poke = 0;
  mc_ctx_scope scope;
  if (MC_FAILED(mc_ctx_enter(device, &scope))) {
    pthread_mutex_lock(&g_alloc.lock);
    int lean = d->lean;
    pthread_mutex_unlock(&g_alloc.lock);
    return lean;
  }
  int lean = headroom_check(d, 0, extra, &victims, &poke);
  if (victims) release_list(victims); /* pool blocks: no wait */
  mc_ctx_leave(&scope);
  pthread_mutex_lock(&g_alloc.lock);
  if (d->lean) lean = 1; /* or another thread's check since found the device lean */
  int start = (poke || d->pend_head) && lean ? poke_reclaimer(d) : 0;
  pthread_mutex_unlock(&g_alloc.lock);
  poked(device, d, start);
  return lean;
}

/* Before a driver allocation of `bytes` for the cache (no lock held): the first one of a device,
 * and every one while the device is lean, checks the headroom as if the allocation were made, so
 * driver_alloc knows whether it may use the pool (not near capacity). */
static void pre_alloc_headroom(int device, uint64_t bytes) {
  pthread_mutex_lock(&g_alloc.lock);
  dev_alloc *d = dev_of(device);
  int check = d && mc_config()->allocator_headroom && mc_cu.cuMemGetInfo && (!d->checked || d->lean);
  pthread_mutex_unlock(&g_alloc.lock);
  if (check) headroom_now(device, d, bytes);
}

/* Device work the library was asked for so far, by every thread: kernel launches, copies,
 * memsets, sparse operations. A count made before something that happens before this call is in
 * it (stats.h), so a free that follows the program's own ordering with the work sees it. */
static uint64_t work_count(void) {
  return mc_stat_get(MC_STAT_launches) + mc_stat_get(MC_STAT_device_ops);
}

/* The driver is initialised and `device` is one the allocator serves. */
static mc_status alloc_device_ok(int device) {
  mc_status st = mc_runtime_init();
  if (MC_FAILED(st)) return st;
  if (device < 0 || device >= mc_device_count() || device >= MC_ALLOC_MAX_DEVICES)
    return MC_FAIL("cuDeviceGet", MC_E_BAD_DEVICE);
  return MC_OK;
}

mc_status mc_alloc_get(int device, uint64_t bytes, const void *stream_key, int host_shared,
                       void **out, int *uncleared) {
  *out = NULL;
  *uncleared = 0;
  mc_status st = alloc_device_ok(device);
  if (MC_FAILED(st)) return st;
  const mc_config_t *cfg = mc_config();
  uint64_t cap = cfg->allocator_cache_bytes;
  uint64_t size = 0;
  int cls = size_class(bytes, &size);
  if (cls < 0 || size > cap) {
    cls = -1; /* never cached: allocated at its exact size */
    size = bytes;
  }
  const void *key = (cfg->allocator_ordered && !host_shared) ? stream_key : NULL;
  int managed = host_shared ? 1 : 0;
  if (cls >= 0 && may_take(device, managed, cls, key)) {
    int ordered = 0;
    /* read before the block is taken (and outside the lock: it sums every thread's counters):
     * work that may touch the block comes after its hand-out */
    uint64_t mark = managed ? work_count() : 0;
    pthread_mutex_lock(&g_alloc.lock);
    dev_alloc *d = dev_of(device);
    mc_block *b = d ? take_locked(d, managed, cls, key, &ordered) : NULL;
    if (b) b->work_mark = mark;
    int query = !b && d && d->zbins[managed][cls]; /* ZEROING ones: is their memset done? */
    uint64_t upto = d ? d->zero_tick : 0;
    pthread_mutex_unlock(&g_alloc.lock);
    if (query && zeroing_query(device, d)) {
      pthread_mutex_lock(&g_alloc.lock);
      zeroing_proven(d, upto);
      b = take_locked(d, managed, cls, NULL, &ordered);
      if (b) b->work_mark = mark;
      pthread_mutex_unlock(&g_alloc.lock);
    }
    if (b) {
      MC_STAT_INC(alloc_hits);
      if (ordered) MC_STAT_INC(alloc_ordered_hits);
      mc_stat_add(MC_STAT_alloc_bytes_in_use, (int64_t)b->bytes);
      *uncleared = ordered;
      *out = (void *)(uintptr_t)b->ptr;
      return MC_OK;
    }
  }
  mc_stats_block *sb = mc_stats_mine();
  MC_STAT_INC_IN(sb, alloc_misses);
  CUdeviceptr p = 0;
  int pooled = 0;
  if (cls >= 0 && !host_shared) pre_alloc_headroom(device, size);
  st = driver_alloc(device, host_shared, cls >= 0, size, &p, &pooled);
  if (st.result == MC_CUDA_ERROR_OUT_OF_MEMORY) {
    MC_STAT_INC(alloc_oom_retries);
    oom_release(device);
    st = driver_alloc(device, host_shared, cls >= 0, size, &p, &pooled);
    if (st.result == MC_CUDA_ERROR_OUT_OF_MEMORY && size != bytes) {
      cls = -1; /* the rounding did not fit: try the exact size, never cached */
      size = bytes;
      st = driver_alloc(device, host_shared, 0, size, &p, &pooled);
    }
  }
  if (MC_FAILED(st)) return st;
  uint64_t mark = host_shared ? work_count() : 0;
  pthread_mutex_lock(&g_alloc.lock);
  mc_block *b = spare_take_locked();
  if (!b) {
    pthread_mutex_unlock(&g_alloc.lock);
    b = calloc(1, sizeof *b);
    pthread_mutex_lock(&g_alloc.lock);
  }
  int check = 0;
  dev_alloc *d = NULL;
  if (!b) {
    pthread_mutex_unlock(&g_alloc.lock);
  } else {
    b->ptr = p;
    b->bytes = size;
    b->device = (int16_t)device;
    b->managed = (int8_t)managed;
    b->pooled = (int8_t)pooled;
    b->cls = (int16_t)cls;
    b->state = B_LIVE;
    b->work_mark = mark;
    int bad = table_insert(b);
    d = dev_of(device);
    if (d) d->check_alloc += size; /* a driver allocation: the device fills up */
    /* A managed allocation never comes from the driver pool, so its check could change nothing
     * about itself: it checks only while the cache holds blocks it could give back or the device
     * is lean (device allocations and frees check as before, the latter counting their block;
     * an alloc + free(NULL) pair of an untouched host_shared block then makes stock's calls and
     * reads no clock). */
    check = d && (!host_shared || d->cached_bytes || d->unready_bytes || d->lean) &&
            headroom_due(d, 0);
    pthread_mutex_unlock(&g_alloc.lock);
    if (bad) {
      free(b); /* untracked: its free goes to cuMemFree, as stock */
      b = NULL;
    }
  }
  if (b) mc_stat_add_in(sb, MC_STAT_alloc_bytes_in_use, (int64_t)size);
  if (check) headroom_now(device, d, 0);
  *out = (void *)(uintptr_t)p;
  return MC_OK;
}

mc_status mc_alloc_untracked(int device, uint64_t bytes, void **out) {
  *out = NULL;
  mc_status st = alloc_device_ok(device);
  if (MC_FAILED(st)) return st;
  CUdeviceptr p = 0;
  int pooled = 0;
  st = driver_alloc(device, 0, 0, bytes, &p, &pooled); /* not cached: cuMemAlloc, no lock */
  /* stock's result, unless memory the cache held was given back: then once more */
  if (st.result == MC_CUDA_ERROR_OUT_OF_MEMORY && oom_release(device)) {
    MC_STAT_INC(alloc_oom_retries);
    st = driver_alloc(device, 0, 0, bytes, &p, &pooled);
  }
  if (MC_FAILED(st)) return st;
  *out = (void *)(uintptr_t)p;
  return MC_OK;
}

/* An event recorded on the foreign stream `s` of `device` at a free (relaxed mode), or NULL when
 * that cannot be done (the stream is being captured, or a driver call failed). */
static CUevent foreign_event(int device, dev_alloc *d, CUstream s) {
  CUevent e = NULL;
  pthread_mutex_lock(&g_alloc.lock);
  if (d->nspare) e = d->spare_ev[--d->nspare];
  pthread_mutex_unlock(&g_alloc.lock);
  mc_ctx_scope scope;
  if (MC_FAILED(mc_ctx_enter(device, &scope))) goto fail;
  mc_relaxed rx;
  mc_relaxed_enter(&rx);
  int ok = !capture_blocks(s) &&
           (e || mc_cu.cuEventCreate(&e, MC_CU_EVENT_DISABLE_TIMING) == 0) &&
           mc_cu.cuEventRecord(e, s) == 0;
  mc_relaxed_leave(&rx);
  mc_ctx_leave(&scope);
  if (ok) return e;
fail:
  if (e) {
    pthread_mutex_lock(&g_alloc.lock);
    spare_event_locked(d, e);
    pthread_mutex_unlock(&g_alloc.lock);
  }
  return NULL;
}

/* Near capacity (the device lean), every free is the stock one: the caller waits for the device
 * (cuCtxSynchronize in its own thread and capture mode, where the stock cuMemFree waits: no wait
 * stock would not make), and then `b` (FREEING, still in the table) goes back to the driver at
 * once, with every block that wait proved idle: the pending ones freed before it (except those
 * waiting for a foreign stream's event, which may belong to another context), the ZEROING ones
 * (their memsets ran in this context) and the ready ones. Another CUDA user allocating right after
 * finds the memory, as with stock (review G9/R23, the difftest's pressure class). If the wait
 * fails, the block is freed with the stock cuMemFree, which reports what stock reports. */
static mc_status lean_free(int device, dev_alloc *d, mc_block *b) {
  mc_ctx_scope scope;
  if (MC_FAILED(mc_ctx_enter(device, &scope))) return drop_block(b);
  pthread_mutex_lock(&g_alloc.lock);
  uint64_t upto = d->free_seq;
  pthread_mutex_unlock(&g_alloc.lock);
  CUresult r = mc_cu.cuCtxSynchronize();
  mc_ctx_leave(&scope);
  if (r != 0) return drop_block(b);
  MC_STAT_INC(alloc_lean_frees);
  mc_block *others = NULL;
  pthread_mutex_lock(&g_alloc.lock);
  table_remove(b);
  b->lnext = NULL;
  detach_pending(d, upto, 1, &others);
  detach_zeroing(d, 1, &others);
  detach_ready(d, 0, 1, &others);
  pthread_mutex_unlock(&g_alloc.lock);
  mc_status st = release_list(b);
  if (others) release_list(others); /* the library's own upkeep: not this free's result */
  return st;
}

/* An untouched host_shared block, freed with the NULL stream: a managed block with no work of
 * the library since it was handed out (work_count unchanged). Its stock free is cheaper than
 * keeping it, which waits for the device and clears it there (run N5: stock 4.9-5.0 us a pair up
 * to 512 KiB and 12.5 at 64 MiB, cached 8.8-9.1 and 29.4): it goes back with the stock cuMemFree.
 * That holds for a block handed out again from the cache too: kept, each such pair would take the
 * block it kept last time and clear it again, a loop that never ends once one block is cached
 * (run N101: 1.48x stock at 256 B); given back, it costs one free of pages the clearing put on
 * the device, and the class's next allocation comes from the driver, untouched. This only
 * chooses between two right answers: work the library does not see (another library, the driver
 * API) makes the free cost what it costs stock. */
static int untouched(const mc_block *b) {
  return b->managed && work_count() == b->work_mark;
}

/* A block freed on a stream (its event on a foreign one, or NULL) joins the pending ones and the
 * reclaimer is told. Called with the lock held; releases it. */
static mc_status pend_unlock(int bdev, dev_alloc *d, mc_block *b, const void *stream_key,
                             CUevent ev, int busy) {
  b->ev = ev;
  d->gather |= busy;
  pending_insert(d, b, stream_key);
  int start = poke_reclaimer(d);
  pthread_mutex_unlock(&g_alloc.lock);
  if (poked(bdev, d, start)) round_here(bdev, d); /* no thread: a round here */
  return MC_OK;
}

/* The stock wrapper's cuMemFree, which enters no context (the pointer names its own); an error
 * is about `device` (faults: context.h). */
static mc_status stock_free(CUdeviceptr p, int device) {
  CUresult r = mc_cu.cuMemFree(p);
  if (r == 0) return MC_OK;
  mc_ctx_note_device(device);
  return MC_FAIL("cuMemFree", r);
}

mc_status mc_alloc_put(void *ptr, const void *stream_key, CUstream foreign, int busy) {
  mc_status st = mc_runtime_init();
  if (MC_FAILED(st)) return st;
  CUdeviceptr p = (CUdeviceptr)(uintptr_t)ptr;
  pthread_mutex_lock(&g_alloc.lock);
  mc_block *b = ptr ? table_find(p) : NULL;
  if (!b) {
    pthread_mutex_unlock(&g_alloc.lock);
    /* Not ours (another library's pointer, a small NULL-stream block: mc_alloc_untracked) */
    return stock_free(p, mc_thread_device());
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
  if (!stream_key && untouched(b)) {
    /* The stock free; the block never joins the cache, so no headroom check, and the driver has
     * its bytes back. */
    MC_STAT_INC(alloc_untouched_frees);
    table_remove(b);
    d->check_alloc = d->check_alloc > b->bytes ? d->check_alloc - b->bytes : 0;
    CUdeviceptr bp = b->ptr;
    int bd = b->device;
    spare_put_locked(b);
    pthread_mutex_unlock(&g_alloc.lock);
    return stock_free(bp, bd);
  }
  int bdev = b->device;
  /* The headroom, when due, is checked counting the freed block as held already (it is about to
   * join the cache); a lean device's ready pool blocks go back then (no wait: the caller has not
   * waited for the device). Near capacity the free is the stock one (lean_free). */
  int check = headroom_due(d, b->bytes), lean = d->lean;
  if (stream_key && !foreign && !check && !lean) /* nothing due: pending in this lock section */
    return pend_unlock(bdev, d, b, stream_key, NULL, busy);
  pthread_mutex_unlock(&g_alloc.lock);
  if (check) lean = headroom_now(bdev, d, b->bytes);
  if (lean) return foreign ? drop_block(b) : lean_free(bdev, d, b);
  if (stream_key) {
    /* Freed on a stream: no driver call for the library's streams (the reclaimer's fence covers
     * them); an event on a foreign one. The reclaimer makes the block ready once proven idle. */
    CUevent ev = NULL;
    if (foreign) {
      ev = foreign_event(bdev, d, foreign);
      if (!ev) return drop_block(b); /* the stock cuMemFree, in the caller's mode */
    }
    pthread_mutex_lock(&g_alloc.lock);
    return pend_unlock(bdev, d, b, stream_key, ev, busy);
  }

  /* The NULL stream: the stock cuMemFree waits for the device; so do we (in the caller's mode, as
   * stock's call). That wait also proves the memsets of earlier NULL-stream frees complete (their
   * ZEROING blocks become ready). Then the block's memset is enqueued on the clearing stream and
   * not waited for: the block is ZEROING until a later call proves it (zeroing_insert); without
   * a clearing stream it is cleared on the legacy stream and waited for, as before. */
  mc_ctx_scope scope;
  st = mc_ctx_enter(bdev, &scope);
  if (MC_FAILED(st)) return drop_block(b);
  pthread_mutex_lock(&g_alloc.lock);
  uint64_t upto = d->zero_tick;
  pthread_mutex_unlock(&g_alloc.lock);
  int bad = mc_cu.cuCtxSynchronize() != 0, zeroing = 0;
  if (!bad && mc_config()->allocator_zero) {
    CUstream zs = zero_stream(d);
    if (zs) {
      mc_relaxed rx;
      mc_relaxed_enter(&rx);
      bad = exiting() || mc_cu.cuMemsetD32Async(b->ptr, 0, (size_t)(b->bytes / 4), zs) != 0;
      mc_relaxed_leave(&rx);
      if (!bad) mc_stat_add(MC_STAT_alloc_bytes_zeroed, (int64_t)b->bytes);
      zeroing = 1;
    } else {
      b->lnext = NULL;
      bad = clear_blocks(b, NULL) != 0;
    }
  }
  mc_ctx_leave(&scope);
  if (bad) return drop_block(b);
  mc_block *victims = NULL;
  pthread_mutex_lock(&g_alloc.lock);
  zeroing_proven(d, upto);
  if (zeroing) zeroing_insert(d, b);
  else ready_insert(d, b);
  detach_ready(d, mc_config()->allocator_cache_bytes, 0, &victims);
  pthread_mutex_unlock(&g_alloc.lock);
  st = victims ? release_list(victims) : MC_OK;
  return st;
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
  mc_stat_set(MC_STAT_alloc_bytes_in_use, 0);
  mc_stat_set(MC_STAT_alloc_bytes_cached, 0);
  mc_stat_set(MC_STAT_alloc_bytes_pending, 0);
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
  pthread_mutex_unlock(&g_alloc.lock);
  if (d) { /* the fence events of the dead context: forgotten (order: round_lock, then lock) */
    pthread_mutex_lock(&d->round_lock);
    d->fev = NULL;
    d->nfev = 0;
    pthread_mutex_unlock(&d->round_lock);
  }
  pthread_mutex_lock(&g_alloc.lock);
  if (d && g_alloc.table) {
    for (size_t i = 0; i < g_alloc.nbuckets; ++i) {
      for (mc_block *b = g_alloc.table[i], *next; b; b = next) {
        next = b->hnext;
        if (b->device != device || b->state == B_CLEARING) continue;
        if (b->state == B_CACHED) ready_unlink(d, b);
        if (b->state == B_ZEROING) zeroing_unlink(d, b);
        if (b->state == B_PENDING) {
          pending_unlink(d, b);
          unready_done(d, b);
        }
        table_remove(b);
        b->state = B_FREEING; /* off every list, owned by nobody */
      }
    }
    /* driver objects of the dead context: forgotten (leaked), made again in the new one */
    d->zero_stream = NULL;
    d->mempool = NULL;
    d->mempool_state = 0;
    d->spare_ev = NULL;
    d->nspare = d->capspare = 0;
  }
  pthread_mutex_unlock(&g_alloc.lock);
}
