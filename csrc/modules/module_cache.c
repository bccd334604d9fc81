/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* module_cache.c - module cache and function resolution (see module_cache.h).
 *
 * Locking rule: g_cache.lock guards the hash table, the list of unreferenced modules, the list of
 * loads in flight, both slot tables (allocation, publication, retirement) and, in every module
 * record, refs, pins, in_table (also read lock-free by thread-cache hits), its thread entries
 * (tents), the idle and hash links and appends to its list of kernels found by name. It is never
 * held across a driver call, a context creation, a blob check or a byte comparison: loads
 * (cuModuleLoadData[Ex], the JIT included), unloads, cuModuleGetFunction and context entries run
 * outside it on a record that is either not yet published or held (a reference or a pin keeps it
 * from being retired). A thread loading a blob whose load another thread has in flight (same
 * address, same JIT options) waits on g_cache.loaded, the lock released, and then gets that
 * module: one driver load per blob. Likewise a thread needing a record's module on a device where
 * another thread is loading it (the record's `loading` bits, under the lock): one driver load per
 * record and device. g_smem_lock serialises raising a kernel's dynamic shared memory limit
 * (cuFuncSetAttribute, a fast call), so the limit in the driver only grows and equals the one
 * recorded. No lock of this file is held while another lock is taken (reclaim.c's included), so
 * the fork handlers may take them in any order.
 *
 * Lifetime: a module record lives while it has references (loads not yet unloaded, in refs or
 * counted in a thread's entry), pins (a thread using its driver modules outside the lock),
 * thread entries (only while in the table), or sits in the table unreferenced (cached).
 * It is retired under the lock once it has neither and was replaced at its address, evicted, or
 * was never cacheable: its slots are retired (its handles and its kernels' handles read as stale
 * from then on), it leaves every list. Then, outside the lock, each of its per-device driver
 * modules is unloaded in its device's context (one of a context reset since is forgotten, never
 * touched: g_module_epoch), its blob copy freed (only holders read it) and the record handed to deferred
 * reclamation (reclaim.h), because mgpuModuleGetFunction scans a record's kernel names without a
 * lock: the record is freed once no such scan can still be reading it.
 *
 * Module state (issue 19): a module is handed out again only if it starts from its image's
 * initial state, as a driver load would. A blob whose image has module-scope state (device
 * globals, host-writable constants: blob_state.h decides, once per driver load, from the image,
 * outside the lock) is never put in the table: each load of it is a driver load with its own
 * record and handles (on another device, that device's own module and state), its last release
 * retires it (its modules unloaded at once, after chain
 * replay's unload hook has submitted pending launches, as for any retired module), and loads
 * while another is held get separate modules, as with the stock library. mgpuModuleGetGlobal
 * (cuModuleGetGlobal on the module of the thread's device; the program may write the module's
 * state through the address) takes a module out of the table
 * under the lock, so no later load gets it and its last release unloads it. Modules without state
 * are cached as before: a hit makes no driver call and classifies nothing.
 *
 * Thread caches (issue 21): LLVM <= 20 code loads and unloads its module around every launch.
 * Each thread keeps entries (TC_WAYS) for the cached modules it loaded last; an entry exists only
 * while its record is in the table, and is linked in the record's tents under the lock. An
 * entry's state word counts this thread's loads of the module answered from the entry and not yet
 * unloaded: they are references of the record kept outside refs, so a repeated load (the blob
 * still checked, hit_is_same) and its unload change only that word, with a compare-and-swap by
 * the owning thread: no lock of this file, no shared write (a hit on a blob in a read-only
 * segment asks rodata.h for the generation, which takes the loader's lock). Other threads change the
 * word only under the lock: an unload from another thread than the loader's (when refs is 0,
 * one load counted in an entry is taken instead) and revocation, which sets TC_REVOKED and adds
 * the count to refs in one atomic step (revoke_locked). Once the owner raised the count, the
 * record is held (a revocation turns the count into a reference); it reads the record's fields
 * only then, and checks in_table after, so a module taken out of the table (mgpuModuleGetGlobal,
 * a different blob found at its address, a context reset) is not handed out from an entry. Every
 * record leaving the table has its entries revoked (unlink_locked); so does the eviction of an
 * unreferenced module, and a thread's exit (its key's destructor) revokes its own. Thread entries
 * do not make a record referenced: a record whose refs and pins are 0 sits in the list of
 * unreferenced modules even while a thread's entry counts loads of it; the eviction looks at the
 * entries of the oldest one first (evict_idle_locked), so it evicts only what nobody holds, least
 * recently released first (a thread's unload answered from its entry notes the release clock
 * there). Stateful modules are never in the table, so never in a thread's cache: each of their
 * loads is a driver load, as before. With MGPU_CACHED_MODULE_CACHE=0 no entry is made. A fork
 * child empties the forking thread's cache (the parent's records are forgotten there). Stale
 * handles: an entry answers only its own handle, whose record it holds (live); any other handle
 * takes the locked way, which reports it as before. Every acquisition of g_cache.lock is counted
 * (module_lock_takes), so the tests prove that such hits take none.
 *
 * Hits: the table is searched under the lock, the blob checked outside it on a held record
 * (hit_is_same): without a lock of this file, the record's ro_generation read and written with
 * atomic loads and stores only (rodata.c's queries take the loader's own lock, never while a lock
 * of this file is held). A record of a blob in a read-only segment may have no copy (one device):
 * after an object was unloaded its hit cannot compare and fails, so the blob is loaded again.
 *
 * Launch path (mc_function_prepare): no lock and no read-modify-write. What a launch reads lives
 * in the kernel's slot, which is never freed: the module handle, and per device the CUfunction
 * and the dynamic shared memory limit set so far. The slot's generation is read before and after
 * (acquire loads; the slot's payload is rewritten with release stores when it is reused), so a
 * launch through a stale handle is reported even if the slot was reused in between. The shared
 * memory limit is kept in one word with the slot's generation, so a raise racing with the slot's
 * reuse cannot be recorded for the next kernel. A launch that races with the last unload of its
 * own module (a program error) may still pass the old CUfunction to the driver, as the stock
 * library would; it never reads freed memory.
 */
#include "modules/module_cache.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "support/blob.h"
#include "support/blob_state.h"
#include "support/config.h"
#include "platform/capture.h"
#include "platform/context.h"
#include "platform/driver.h"
#include "support/reclaim.h"
#include "support/report.h"
#include "support/rodata.h"
#include "support/same_bytes.h"
#include "support/slot_table.h"
#include "support/stats.h"
#include "support/thread_exit.h"

#define MC_BUCKETS 256

/* Blobs shorter than this are compared on every hit even in a read-only segment: comparing 2 KiB
 * (about 27 ns, hot) costs no more than reading the loader's generation (20-30 ns, a lock shared
 * by all threads). */
#define MC_HIT_SKIP_MIN_BYTES 2048

/* Kernels are found by name (cuModuleGetFunction in the device's module) at their first
 * mgpuModuleGetFunction, never enumerated at load: a module of hundreds of kernels costs at load
 * the stock wrapper's cuModuleLoadData, and each kernel its cuModuleGetFunction, when asked for. */
#define NAME_BUCKETS 32 /* per module: chains of kernels found by name (lock-free reads) */

typedef struct kernel_entry {
  char *name;                /* owned copy; immutable */
  uint64_t hash;             /* of name; immutable */
  uint64_t handle;           /* the mc_function handle (its slot: mc_slot_index); immutable once
                                published */
  struct kernel_entry *next; /* the record's list of every kernel; written before publication */
  struct kernel_entry *chain; /* its name bucket's chain; written before publication */
} kernel_entry;

typedef struct module_rec {
  mc_reclaim_node reclaim;    /* deferred free once retired */
  const void *key;            /* blob address (cache key); immutable */
  int jit, opt_level;         /* loaded through mgpuModuleLoadJIT at this level; immutable */
  uint64_t handle;            /* the mc_module handle (its slot: mc_slot_index); immutable once
                                 published */
  unsigned char *copy;        /* private copy of the blob (its header's length), or NULL: taken
                                 for hit verification (a cacheable blob outside a read-only segment, or
                                 shorter than MC_HIT_SKIP_MIN_BYTES) and for loads on other devices
                                 (more than one device); at the blob's offset within 64 bytes
                                 (mc_copy_alloc_like: both read aligned); immutable; read by
                                 holders of the record only; freed at retirement (mc_copy_free) */
  size_t len;                 /* blob length from its header (0: not cacheable); immutable */
  uint64_t ro_generation;     /* the generation of loaded objects (rodata.h) under which the blob
                                 was last found in a read-only segment of a loaded object, before
                                 a comparison (or the copy) that found it equal; 0: every hit
                                 compares. Atomic: read and written by hits without the lock */
  int ro_forever;             /* the blob lies in a read-only segment of the executable, which is
                                 never unloaded: hits are not compared and read no generation
                                 (MGPU_CACHED_HIT_CHECK=auto); immutable */
  mc_blob_kind kind;          /* immutable (MC_BLOB_UNKNOWN: not cacheable, never in the table) */
  int home;                   /* the device of the first driver load; immutable */
  CUmodule *mods;             /* [ndev] the driver module loaded in each device's primary context,
                                 NULL until its first need there; stored under the lock (release),
                                 read by holders of the record; unloaded at retirement */
  uint32_t *mod_epoch;        /* [ndev] g_module_epoch[d] when mods[d] was loaded (a module of an older
                                 epoch belongs to a reset context: never used again, never
                                 unloaded); under the lock */
  uint64_t loading;           /* bit d: a thread is loading mods[d] (others wait on
                                 g_cache.loaded: one driver load per device); under the lock */
  int told;                   /* the message that it cannot be loaded elsewhere was printed; under
                                 the lock */
  kernel_entry *named;        /* every kernel found by name so far; head stored with release,
                                 under the lock; read lock-free (acquire) */
  kernel_entry *by_name[NAME_BUCKETS]; /* the same kernels by name hash; heads stored with
                                 release, under the lock; read lock-free (acquire) */
  size_t nnamed;              /* length of `named`; under the lock */
  unsigned char *resolved;    /* [ndev] every kernel known then resolved there (its first launch
                                 there); atomic flags: a kernel found later is resolved there
                                 at once */
  int refs;                   /* loads minus unloads; under the lock */
  int pins;                   /* threads using its modules outside the lock; under the lock */
  int callers_mode;           /* 1: retired by the program's own mgpuModuleUnload (a module no
                                 cache keeps), so its home module is unloaded in the caller's
                                 capture mode, as stock unloads it; set under the lock, read by
                                 bury() once the record is off every list */
  int in_table;               /* reachable through the hash table; written under the lock with
                                 atomic stores; read by thread-cache hits with an acquire load */
  struct tc_entry *tents;     /* the threads' cache entries of this record (not revoked): only
                                 while in_table; under the lock */
  int idle;                   /* in the list of unreferenced modules; under the lock */
  uint64_t stamp;             /* its place in that list: 2 x g_release_clock when it joined it
                                 (the list is sorted by it); under the lock */
  uint64_t tc_stamp;          /* the latest unload answered by a thread entry revoked since
                                 (2 x g_release_clock + 1 then); under the lock */
  struct module_rec *idle_prev, *idle_next; /* that list, oldest first; under the lock */
  struct module_rec *next;    /* hash chain; under the lock */
  struct module_rec *grave;   /* retired, awaiting its unload; under the lock, then its retirer */
} module_rec;

typedef struct inflight {     /* a load in progress, on the loading thread's stack */
  const void *key;
  int jit, opt_level;
  struct inflight *next;
} inflight;

static struct {
  pthread_mutex_t lock;             /* see the locking rule above */
  pthread_cond_t loaded;            /* broadcast when a load in flight ends */
  module_rec *buckets[MC_BUCKETS];  /* chains of cacheable modules */
  module_rec *idle_head, *idle_tail; /* cached modules nobody holds, oldest first */
  size_t nidle;                     /* length of that list */
  inflight *loading;                /* loads in flight */
} g_cache = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, NULL, NULL, 0, NULL};

static pthread_mutex_t g_smem_lock = PTHREAD_MUTEX_INITIALIZER; /* raises of smem limits */

/* Per device, the number of primary-context resets seen (mc_module_cache_forget_device): a driver
 * module loaded under an older value lives in a dead context. Written under g_cache.lock, read
 * with atomic loads. */
static uint32_t g_module_epoch[MC_MAX_DEVICES];

static uint32_t epoch_of(int device) { return __atomic_load_n(&g_module_epoch[device], __ATOMIC_ACQUIRE); }

/* Every acquisition of g_cache.lock is counted (statistic module_lock_takes, per thread: no shared
 * write), so the tests can prove that repeated hits, look-ups and unloads take no lock. */
static inline void cache_lock(void) {
  MC_STAT_INC(module_lock_takes);
  pthread_mutex_lock(&g_cache.lock);
}

/* Devices covered by every slot and record: mc_device_count() at the first load (at least 1);
 * written once under the lock before any function slot is published, then read lock-free. */
static int g_ndev;

/* Module slots hold the record pointer; function slots hold the module handle, then per device
 * the CUfunction (0 until resolved) and the smem word (generation << 32 | limit set so far), then
 * a flags word (FN_TRANSIENT). */
static mc_slot_table g_modules;   /* zero-initialised (.bss); tag set by tag_tables */
static mc_slot_table g_functions; /* likewise */
#define MODULE_TAG 0xC3           /* top byte of module handles */
#define FUNCTION_TAG 0xF5         /* top byte of function handles */
#define FN_WORD(d) (1 + (size_t)(d))
#define SMEM_WORD(ndev, d) (1 + (size_t)(ndev) + (size_t)(d))
#define FLAGS_WORD(ndev) (1 + 2 * (size_t)(ndev)) /* FN_TRANSIENT; written before publication */
#define FN_TRANSIENT 1u /* the module is not cached: its next load gives new function handles */

static size_t bucket_of(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 29;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 32;
  return (size_t)(x % MC_BUCKETS);
}

static uint64_t hash_name(const char *s) {
  uint64_t h = 1469598103934665603ULL; /* FNV-1a */
  for (; *s; ++s) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

static int ndev(void) { return __atomic_load_n(&g_ndev, __ATOMIC_ACQUIRE); }

/* The tables' tags, at library load: before any mgpu* call can look up or make a handle (the
 * loader runs this library's constructors before those of the code that calls it). */
__attribute__((constructor)) static void tag_tables(void) {
  mc_slot_table_set_tag(&g_modules, MODULE_TAG);
  mc_slot_table_set_tag(&g_functions, FUNCTION_TAG);
}

static void setup_locked(void) {
  if (g_ndev) return;
  if (!g_modules.tag) tag_tables(); /* a call made before the constructors ran (a loader cycle) */
  int n = mc_device_count();
  if (n < 1) n = 1;
  mc_slot_table_set_payload(&g_modules, sizeof(uint64_t));
  mc_slot_table_set_payload(&g_functions, (2 + 2 * (size_t)n) * sizeof(uint64_t));
  __atomic_store_n(&g_ndev, n, __ATOMIC_RELEASE);
}

/* ---- records ---- */

static void free_entry_fields(kernel_entry *e) { free(e->name); }

static void rec_free(mc_reclaim_node *node) {
  module_rec *m = (module_rec *)node;
  for (kernel_entry *e = m->named, *n; e; e = n) {
    n = e->next;
    free_entry_fields(e);
    free(e);
  }
  free(m->resolved);
  free(m->mods);
  free(m->mod_epoch);
  mc_copy_free(m->copy);
  free(m);
}

static int entry_init(kernel_entry *e, const char *name) {
  e->name = strdup(name ? name : "");
  if (!e->name) return -1;
  e->hash = hash_name(e->name);
  return 0;
}

/* Lock-free (acquire loads of the bucket heads; entries are immutable once published). */
static kernel_entry *find_entry(module_rec *m, const char *name, uint64_t h) {
  for (kernel_entry *e = __atomic_load_n(&m->by_name[h % NAME_BUCKETS], __ATOMIC_ACQUIRE); e;
       e = e->chain)
    if (e->hash == h && strcmp(e->name, name) == 0) return e;
  return NULL;
}

/* Make e (published) reachable by name and in the record's list. Lock held. */
static void add_entry_locked(module_rec *m, kernel_entry *e) {
  size_t b = e->hash % NAME_BUCKETS;
  e->chain = m->by_name[b];
  e->next = m->named;
  __atomic_store_n(&m->by_name[b], e, __ATOMIC_RELEASE);
  __atomic_store_n(&m->named, e, __ATOMIC_RELEASE);
  m->nnamed++;
}

static uint64_t *fslot(uint32_t slot) { return mc_slot_payload(&g_functions, slot); }

/* A function slot for entry e of module handle mh: allocated, filled (fns: its CUfunction per
 * device, 0 where not resolved), published. Lock held. */
static int publish_entry_locked(kernel_entry *e, uint64_t mh, int transient,
                                const CUfunction *fns) {
  uint32_t slot;
  uint64_t h;
  uint64_t *w = mc_slot_alloc(&g_functions, &slot, &h);
  if (!w) return -1;
  int n = ndev();
  uint64_t gen = mc_slot_gen(h);
  __atomic_store_n(&w[0], mh, __ATOMIC_RELEASE);
  __atomic_store_n(&w[FLAGS_WORD(n)], transient ? FN_TRANSIENT : 0u, __ATOMIC_RELEASE);
  for (int d = 0; d < n; ++d) {
    __atomic_store_n(&w[FN_WORD(d)], (uint64_t)(uintptr_t)fns[d], __ATOMIC_RELEASE);
    __atomic_store_n(&w[SMEM_WORD(n, d)], gen << 32, __ATOMIC_RELEASE);
  }
  e->handle = mc_slot_publish(&g_functions, slot);
  return 0;
}

/* Give the record a module slot (its kernels get theirs when first asked for by name). 0, or -1
 * (no memory: nothing taken). Lock held. */
static int publish_locked(module_rec *m) {
  uint32_t ms;
  uint64_t mh;
  void *mp = mc_slot_alloc(&g_modules, &ms, &mh);
  if (!mp) return -1;
  __atomic_store_n((module_rec **)mp, m, __ATOMIC_SEQ_CST);
  m->handle = mc_slot_publish(&g_modules, ms);
  return 0;
}

/* The live record of module handle h, or NULL with *state saying why. Lock held (or inside a
 * reclamation read section, with mc_slot_still checked after the reads). */
static module_rec *module_of(uint64_t h, mc_slot_state *state) {
  void *p = NULL;
  *state = mc_slot_find(&g_modules, h, &p);
  return *state == MC_SLOT_LIVE ? __atomic_load_n((module_rec **)p, __ATOMIC_SEQ_CST) : NULL;
}

static mc_status handle_error(const char *where, mc_slot_state s) {
  return MC_FAIL(where, s == MC_SLOT_STALE ? MC_E_STALE_HANDLE : MC_E_UNKNOWN_HANDLE);
}

/* ---- the table, the idle list, retirement (lock held) ---- */

static module_rec *find_locked(const void *key, int jit, int opt_level) {
  for (module_rec *m = g_cache.buckets[bucket_of(key)]; m; m = m->next)
    if (m->key == key && m->jit == jit && m->opt_level == opt_level) return m;
  return NULL;
}

static void revoke_all_locked(module_rec *m);

static void unlink_locked(module_rec *m) {
  module_rec **pp = &g_cache.buckets[bucket_of(m->key)];
  while (*pp && *pp != m) pp = &(*pp)->next;
  if (*pp) *pp = m->next;
  m->next = NULL;
  __atomic_store_n(&m->in_table, 0, __ATOMIC_RELEASE);
  revoke_all_locked(m); /* no thread's cache hands it out again */
}

static void idle_remove_locked(module_rec *m) {
  if (!m->idle) return;
  if (m->idle_prev) m->idle_prev->idle_next = m->idle_next;
  else g_cache.idle_head = m->idle_next;
  if (m->idle_next) m->idle_next->idle_prev = m->idle_prev;
  else g_cache.idle_tail = m->idle_prev;
  m->idle_prev = m->idle_next = NULL;
  m->idle = 0;
  g_cache.nidle--;
}

/* Ticks at every module joining the list of unreferenced ones (under the lock); read, never
 * written, by the unloads that threads' caches answer, to order them among those (eviction). */
static uint64_t g_release_clock;

static void idle_push_locked(module_rec *m) {
  m->stamp = 2 * __atomic_add_fetch(&g_release_clock, 1, __ATOMIC_RELAXED);
  m->idle_prev = g_cache.idle_tail;
  m->idle_next = NULL;
  if (g_cache.idle_tail) g_cache.idle_tail->idle_next = m;
  else g_cache.idle_head = m;
  g_cache.idle_tail = m;
  m->idle = 1;
  g_cache.nidle++;
}

/* Retire a record nobody holds: handles stale, off every list, onto *grave for bury(). */
static void retire_locked(module_rec *m, module_rec **grave) {
  idle_remove_locked(m);
  if (m->in_table) unlink_locked(m);
  uint32_t ms = mc_slot_index(m->handle);
  __atomic_store_n((module_rec **)mc_slot_payload(&g_modules, ms), NULL, __ATOMIC_SEQ_CST);
  mc_slot_retire(&g_modules, ms);
  for (kernel_entry *e = m->named; e; e = e->next)
    mc_slot_retire(&g_functions, mc_slot_index(e->handle));
  m->grave = *grave;
  *grave = m;
}

static uint64_t tc_stamp_locked(const module_rec *m);
static int tc_loads_locked(const module_rec *m);

/* Put m (off the list) back in the list at its stamp's place, from the newest end. */
static void idle_insert_locked(module_rec *m) {
  module_rec *after = g_cache.idle_tail;
  while (after && after->stamp > m->stamp) after = after->idle_prev;
  m->idle_prev = after;
  m->idle_next = after ? after->idle_next : g_cache.idle_head;
  if (m->idle_next) m->idle_next->idle_prev = m;
  else g_cache.idle_tail = m;
  if (after) after->idle_next = m;
  else g_cache.idle_head = m;
  m->idle = 1;
  g_cache.nidle++;
}

/* Unload the least recently released unreferenced modules beyond the limit. The list does not
 * see the loads and unloads that threads' caches answer (see "Thread caches"), so its oldest
 * module is looked at first: loads of it still counted in a thread's entry make it referenced
 * (the entries are revoked, their loads become references: it leaves the list, as that load's
 * hit would have taken it off); one unloaded through a thread's entry after it joined the list
 * moves to that unload's place, as the unload would have moved it (the clock does not move
 * meanwhile, so each module moves at most once and the loop ends); any other is unloaded, its
 * entries revoked first. */
static void evict_idle_locked(module_rec **grave) {
  size_t cap = mc_config()->module_cache;
  while (g_cache.nidle > cap) {
    module_rec *m = g_cache.idle_head;
    if (tc_loads_locked(m)) { /* referenced after all: its entries' loads become references */
      revoke_all_locked(m);
      continue;
    }
    uint64_t last = tc_stamp_locked(m);
    if (last > m->stamp) {
      idle_remove_locked(m);
      m->stamp = last;
      idle_insert_locked(m);
      continue;
    }
    revoke_all_locked(m);
    if (m->refs) continue; /* loads counted in a thread's entry: referenced, off the list */
    retire_locked(m, grave);
    MC_STAT_INC(module_evictions);
  }
}

/* Take a hold (reference or pin) on m: a held record is never retired. */
static void hold_locked(module_rec *m) {
  if (m->refs == 0 && m->pins == 0) idle_remove_locked(m);
}

/* After dropping a hold: a record nobody holds is kept (cached, within the limit) or retired. */
static void release_locked(module_rec *m, module_rec **grave) {
  if (m->refs || m->pins) return;
  if (!m->in_table) {
    retire_locked(m, grave); /* replaced at its address, or never cacheable: really unload */
    return;
  }
  idle_push_locked(m); /* kept for the next load of its blob (LLVM <= 20 code: every launch) */
  evict_idle_locked(grave);
}

static void (*g_unload_hook)(void); /* atomic; mc_module_set_unload_hook */

void mc_module_set_unload_hook(void (*hook)(void)) {
  __atomic_store_n(&g_unload_hook, hook, __ATOMIC_RELEASE);
}

/* Unload every driver module of m (nobody else reaches it): each in its device's context. The
 * unload the program asked for (callers_mode: the home module of a module no cache keeps) runs in
 * the caller's capture mode, as stock's does; the others are the library's own initiative (an
 * eviction, a replaced blob, a copy on another device) and run in relaxed mode (capture.h). A
 * module of a reset context is forgotten, never touched. Failures (e.g. at exit) are of no
 * consequence here. No lock held. */
static void unload_modules(module_rec *m) {
  for (int d = 0, n = ndev(); d < n; ++d) {
    if (!m->mods[d] || m->mod_epoch[d] != epoch_of(d)) continue;
    mc_ctx_scope scope;
    int entered = !MC_FAILED(mc_ctx_enter(d, &scope));
    mc_relaxed rx = {0}; /* leave restores nothing unless enter swapped */
    if (!(m->callers_mode && d == m->home)) mc_relaxed_enter(&rx);
    mc_cu.cuModuleUnload(m->mods[d]);
    mc_relaxed_leave(&rx);
    if (entered) mc_ctx_leave(&scope);
    m->mods[d] = NULL;
    MC_STAT_INC(driver_module_unloads);
  }
}

/* Unload retired records from the driver and free them. No lock held. */
static void bury(module_rec *grave) {
  void (*hook)(void) = __atomic_load_n(&g_unload_hook, __ATOMIC_ACQUIRE);
  if (grave && hook) hook();
  while (grave) {
    module_rec *m = grave;
    grave = m->grave;
    unload_modules(m);
    mc_debug("unloaded module of blob %p (%zu bytes)", m->key, m->len);
    mc_copy_free(m->copy); /* no reference left: nobody compares against it */
    m->copy = NULL;
    m->reclaim.free_fn = rec_free;
    mc_reclaim_retire(&m->reclaim);
  }
}

static void unpin(module_rec *m) {
  module_rec *grave = NULL;
  cache_lock();
  m->pins--;
  release_locked(m, &grave);
  pthread_mutex_unlock(&g_cache.lock);
  bury(grave);
}

/* ---- thread caches (issue 21): repeated hits and unloads without the lock ----
 * LLVM <= 20 code loads and unloads its module around every launch. Each thread keeps the
 * modules it loaded last (TC_WAYS entries); a load of the same blob again is answered from its
 * entry, and the unload of that load too, with no lock and no write to a shared line: see
 * "Thread caches" in the locking rule above. */

#define TC_WAYS 8                  /* modules per thread */
#define TC_REVOKED (1ull << 63)    /* in tc_entry.state: the entry no longer holds its record */
#define TC_NAME_BYTES 48           /* kernel names a thread's entry remembers (longer: not) */
#define TC_FNS 4                   /* kernels a thread's entry remembers per module */

typedef struct tc_entry {
  uint64_t state;        /* atomic: TC_REVOKED | the loads of m this thread answered from the
                            entry and not yet unloaded (references counted here, not in
                            m->refs). Changed lock-free by its thread (compare-and-swap), by
                            other threads only under the lock (revocation, an unload from another
                            thread) */
  uint64_t released;     /* atomic: 2 x g_release_clock + 1 at its thread's last unload
                            answered here (eviction order); written by its thread only */
  module_rec *m;         /* its thread only; NULL: a free entry. Read only while not revoked */
  const void *key;       /* its thread only: m's key, jit, opt_level, handle */
  int jit, opt_level;
  uint64_t handle;
  struct tc_entry *tnext, **tprev; /* m->tents while not revoked; under the lock */
  /* The last TC_FNS look-ups of kernels of m this thread made while the entry was live (its
   * thread only; handle 0: none): the name's pointer and bytes, the function handle, and the
   * thread's device it was resolved on. A look-up of one of these names (same pointer, same
   * bytes) on the same device while the entry is still live (not revoked) is answered from it
   * (LLVM <= 20 code looks each of a module's kernels up after every load of it, LLVM >= 21 code
   * before every launch). */
  struct tc_fn {
    const char *ptr;
    char name[TC_NAME_BYTES];
    uint64_t handle;
    int device;
  } fns[TC_FNS];
  unsigned fn_next; /* the next one replaced */
} tc_entry;

typedef struct tcache {
  tc_entry e[TC_WAYS];
  unsigned victim;       /* its thread only: the next entry replaced when all are taken */
  unsigned last;         /* its thread only: the entry a load last answered or installed, looked
                            at first (LLVM <= 20 code loads the same module again and again) */
  mc_stats_block *stats; /* its thread's counters (stats.h), read once at creation: the paths
                            answered here count through it, with no second thread-local look-up */
} tcache;

static _Thread_local tcache *tl_tc;        /* this thread's cache; NULL: none yet */

/* Detach entry e from its record: its loads become references of the record (a record so
 * referenced leaves the list of unreferenced ones). Lock held; e is not revoked. */
static void revoke_locked(tc_entry *e) {
  module_rec *m = e->m;
  uint64_t count = __atomic_fetch_or(&e->state, TC_REVOKED, __ATOMIC_ACQ_REL) & ~TC_REVOKED;
  uint64_t r = __atomic_load_n(&e->released, __ATOMIC_RELAXED);
  if (r > m->tc_stamp) m->tc_stamp = r;
  *e->tprev = e->tnext;
  if (e->tnext) e->tnext->tprev = e->tprev;
  e->tnext = NULL;
  e->tprev = NULL;
  if (count) {
    hold_locked(m);
    m->refs += (int)count;
  }
}

/* Every thread entry of m revoked (m leaves the table, is evicted, or a context reset). */
static void revoke_all_locked(module_rec *m) {
  while (m->tents) revoke_locked(m->tents);
}

/* When m was last unloaded: its own stamp, or a later unload a thread's entry answered. */
static uint64_t tc_stamp_locked(const module_rec *m) {
  uint64_t last = m->stamp > m->tc_stamp ? m->stamp : m->tc_stamp;
  for (const tc_entry *e = m->tents; e; e = e->tnext) {
    uint64_t r = __atomic_load_n(&e->released, __ATOMIC_RELAXED);
    if (r > last) last = r;
  }
  return last;
}

/* Whether loads of m are counted in threads' entries (not yet unloaded). Lock held. */
static int tc_loads_locked(const module_rec *m) {
  for (const tc_entry *e = m->tents; e; e = e->tnext)
    if (__atomic_load_n(&e->state, __ATOMIC_ACQUIRE) & ~TC_REVOKED) return 1;
  return 0;
}

/* One load of m counted in another thread's entry, taken away: an unload in a thread other
 * than the loader's. 1 if one was there. Lock held. */
static int take_thread_load_locked(module_rec *m) {
  for (tc_entry *e = m->tents; e; e = e->tnext) {
    uint64_t s = __atomic_load_n(&e->state, __ATOMIC_ACQUIRE);
    while (!(s & TC_REVOKED) && (s & ~TC_REVOKED))
      if (__atomic_compare_exchange_n(&e->state, &s, s - 1, 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE))
        return 1;
  }
  return 0;
}

/* Thread exit (thread_exit.h): every entry detached, its loads handed to the records. */
static void tc_thread_exit(void *p) {
  tcache *tc = p;
  tl_tc = NULL;
  cache_lock();
  for (int i = 0; i < TC_WAYS; ++i)
    if (tc->e[i].m && !(__atomic_load_n(&tc->e[i].state, __ATOMIC_ACQUIRE) & TC_REVOKED))
      revoke_locked(&tc->e[i]);
  pthread_mutex_unlock(&g_cache.lock);
  free(tc);
}

/* Put m (held by this thread's load, in the table) in this thread's cache, replacing its entry
 * for the same blob or the next victim. Nothing without a thread key or memory, or with
 * MGPU_CACHED_MODULE_CACHE=0 (nothing is kept unreferenced, so nothing per thread either).
 * Lock held. */
static void tc_install_locked(module_rec *m) {
  if (!mc_config()->module_cache) return;
  tcache *tc = tl_tc;
  if (!tc) {
    tc = calloc(1, sizeof *tc);
    if (!tc) return;
    tc->stats = mc_stats_mine();
    if (mc_thread_exit_set(MC_EXIT_MODULES, tc_thread_exit, tc) != 0) {
      free(tc);
      return;
    }
    tl_tc = tc;
  }
  tc_entry *slot = NULL;
  for (int i = 0; i < TC_WAYS && !slot; ++i) {
    tc_entry *e = &tc->e[i];
    if (e->m && (__atomic_load_n(&e->state, __ATOMIC_ACQUIRE) & TC_REVOKED)) e->m = NULL;
    if (e->m == m) { /* there already */
      tc->last = (unsigned)i;
      return;
    }
    if (e->m && e->key == m->key && e->jit == m->jit && e->opt_level == m->opt_level) slot = e;
  }
  for (int i = 0; i < TC_WAYS && !slot; ++i)
    if (!tc->e[i].m) slot = &tc->e[i];
  if (!slot) slot = &tc->e[tc->victim++ % TC_WAYS];
  if (slot->m && !(__atomic_load_n(&slot->state, __ATOMIC_ACQUIRE) & TC_REVOKED))
    revoke_locked(slot);
  slot->m = m;
  slot->key = m->key;
  slot->jit = m->jit;
  slot->opt_level = m->opt_level;
  slot->handle = m->handle;
  for (int i = 0; i < TC_FNS; ++i) slot->fns[i].handle = 0;
  __atomic_store_n(&slot->released, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&slot->state, 0, __ATOMIC_RELEASE);
  slot->tnext = m->tents;
  if (m->tents) m->tents->tprev = &slot->tnext;
  slot->tprev = &m->tents;
  m->tents = slot;
  tc->last = (unsigned)(slot - tc->e);
}

/* One load counted in e undone by its thread, lock-free: 1 if it was there (not revoked, not
 * zero); else the caller goes the locked way (a revoked entry's loads are the record's refs). */
static int tc_unload(tc_entry *e) {
  uint64_t s = __atomic_load_n(&e->state, __ATOMIC_ACQUIRE);
  while (!(s & TC_REVOKED) && (s & ~TC_REVOKED))
    if (__atomic_compare_exchange_n(&e->state, &s, s - 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      /* its place among the releases, for eviction: a read of the clock, a store to its own line */
      uint64_t r = 2 * __atomic_load_n(&g_release_clock, __ATOMIC_RELAXED) + 1;
      if (__atomic_load_n(&e->released, __ATOMIC_RELAXED) != r)
        __atomic_store_n(&e->released, r, __ATOMIC_RELAXED);
      return 1;
    }
  if (s & TC_REVOKED) e->m = NULL; /* detached by the lock holder: free from now on */
  return 0;
}

/* This thread's entry for module handle h (revoked or not), else NULL; the last entry answered
 * first (tc->last). */
static tc_entry *tc_find(tcache *tc, uint64_t h) {
  if (!tc) return NULL;
  for (unsigned k = 0; k < TC_WAYS; ++k) {
    tc_entry *e = &tc->e[(tc->last + k) % TC_WAYS];
    if (e->m && e->handle == h) return e;
  }
  return NULL;
}

static mc_status locked_unload(uint64_t h, int programs);
static inline __attribute__((always_inline)) int hit_is_same(module_rec *m, const void *blob,
                                                              mc_stats_block *sb);

/* A load answered from this thread's cache: 1 with *out set, or 0 (the locked way). The entry's
 * count is raised first (a compare-and-swap on this thread's own line): from then on the record
 * is held, since a revocation turns the count into references; a record taken out of the table
 * meanwhile, or whose blob changed, is let go and the locked path decides. */
static int tc_load(tcache *tc, const void *blob, int jit, int opt_level, mc_module **out) {
  tc_entry *e = NULL;
  for (unsigned k = 0; k < TC_WAYS && !e; ++k) { /* the last entry answered first */
    unsigned i = (tc->last + k) % TC_WAYS;
    if (tc->e[i].m && tc->e[i].key == blob && tc->e[i].jit == jit &&
        tc->e[i].opt_level == opt_level) {
      e = &tc->e[i];
      tc->last = i;
    }
  }
  if (!e) return 0;
  uint64_t s = __atomic_load_n(&e->state, __ATOMIC_ACQUIRE);
  do {
    if (s & TC_REVOKED) {
      e->m = NULL;
      return 0;
    }
  } while (!__atomic_compare_exchange_n(&e->state, &s, s + 1, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE));
  module_rec *m = e->m;
  if (!__atomic_load_n(&m->in_table, __ATOMIC_ACQUIRE) || !hit_is_same(m, blob, tc->stats)) {
    uint64_t h = e->handle;
    if (!tc_unload(e)) (void)locked_unload(h, 0); /* revoked meanwhile: a reference of m */
    return 0;
  }
  MC_STAT_INC_IN(tc->stats, module_loads);
  MC_STAT_INC_IN(tc->stats, module_hits);
  MC_STAT_INC_IN(tc->stats, module_thread_hits);
  *out = (mc_module *)(uintptr_t)e->handle;
  return 1;
}

/* ---- resolution ---- */

/* Load m's image into the current context (that of a device): cuModuleLoadData, or for
 * mgpuModuleLoadJIT cuModuleLoadDataEx with the optimisation level (and the error log, if log).
 * No lock held. */
static CUresult driver_load(const module_rec *m, const void *image, CUmodule *out, char *log,
                            size_t log_size) {
  CUresult r;
  if (m->jit) {
    char errlog[4096];
    errlog[0] = 0;
    CUjit_option opts[3] = {MC_CU_JIT_ERROR_LOG_BUFFER, MC_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            MC_CU_JIT_OPTIMIZATION_LEVEL};
    void *vals[3] = {errlog, (void *)(uintptr_t)sizeof errlog, (void *)(intptr_t)m->opt_level};
    r = mc_cu.cuModuleLoadDataEx(out, image, 3, opts, vals);
    if (r != 0 && log && log_size) {
      strncpy(log, errlog, log_size - 1);
      log[log_size - 1] = 0;
    }
  } else {
    r = mc_cu.cuModuleLoadData(out, image);
  }
  if (r == 0) MC_STAT_INC(driver_module_loads);
  return r;
}

static const char *load_call(const module_rec *m) {
  return m->jit ? "cuModuleLoadDataEx" : "cuModuleLoadData";
}

/* The bytes to load m from on another device than its first (or again after a reset): its copy,
 * else the blob itself while it provably still holds the bytes loaded (a read-only segment under
 * an unchanged generation, rodata.h), else NULL. The caller holds m. */
static const void *image_of(const module_rec *m) {
  if (m->copy) return m->copy;
  if (m->ro_forever) return m->key;
  uint64_t g = __atomic_load_n(&m->ro_generation, __ATOMIC_ACQUIRE);
  return g && mc_rodata_generation() == g ? m->key : NULL;
}

/* m's driver module on `device`, whose primary context is current: loaded there (from image_of)
 * at its first need, one module per device and context. The caller holds m; no lock held. */
static mc_status device_module(module_rec *m, int device, CUmodule *out) {
  uint64_t bit = (uint64_t)1 << device;
  cache_lock();
  for (;;) {
    uint32_t epoch = epoch_of(device);
    CUmodule mod = m->mod_epoch[device] == epoch ? m->mods[device] : NULL;
    if (mod) {
      pthread_mutex_unlock(&g_cache.lock);
      *out = mod;
      return MC_OK;
    }
    if (!(m->loading & bit)) break;
    pthread_cond_wait(&g_cache.loaded, &g_cache.lock); /* another thread's load there */
  }
  m->loading |= bit;
  uint32_t epoch = epoch_of(device); /* before the load: a reset meanwhile makes it stale */
  pthread_mutex_unlock(&g_cache.lock);
  const void *image = image_of(m);
  if (!image) {
    cache_lock();
    int tell = !m->told;
    m->told = 1;
    m->loading &= ~bit;
    pthread_cond_broadcast(&g_cache.loaded);
    pthread_mutex_unlock(&g_cache.lock);
    if (tell)
      mc_message("a module loaded on device %d cannot be loaded on device %d: %s, so no copy "
                 "was kept, and the caller's bytes may be gone; load it with device %d current",
                 m->home, device,
                 m->ro_generation ? "it lay in a read-only segment of an object unloaded since"
                                  : "its length is not known (not an ELF, fatbin, PTX or "
                                    "offload bundle whose header gives it, or a compressed "
                                    "bundle of version 1)",
                 device);
    return MC_FAIL(load_call(m), MC_CUDA_ERROR_NOT_SUPPORTED);
  }
  CUmodule mod = NULL;
  CUresult r = driver_load(m, image, &mod, NULL, 0);
  cache_lock();
  m->loading &= ~bit;
  if (r == 0) { /* a module of an older epoch is forgotten (never unloaded) */
    __atomic_store_n(&m->mods[device], mod, __ATOMIC_RELEASE);
    m->mod_epoch[device] = epoch;
  }
  pthread_cond_broadcast(&g_cache.loaded);
  pthread_mutex_unlock(&g_cache.lock);
  if (r != 0) return MC_FAIL(load_call(m), r);
  *out = mod;
  return MC_OK;
}

typedef struct unresolved {
  uint32_t slot;    /* the kernel's function slot */
  const char *name; /* its entry's name (immutable while the record is held) */
  CUfunction fn;    /* resolved outside the lock */
} unresolved;

/* Note e in *todo (at *n) if it has no function on `device` yet. Lock held. */
static void note_unresolved(const kernel_entry *e, int device, unresolved *todo, size_t *n) {
  uint32_t slot = mc_slot_index(e->handle);
  if (!__atomic_load_n(&fslot(slot)[FN_WORD(device)], __ATOMIC_ACQUIRE))
    todo[(*n)++] = (unresolved){slot, e->name, NULL};
}

/* Resolve every kernel of m not yet resolved on `device`, whose context is current (its module
 * loaded there first if needed). The caller holds m. The driver calls run without the lock;
 * racing resolutions store the same function. */
static mc_status resolve_module(module_rec *m, int device) {
  CUmodule mod = NULL;
  mc_status mst = device_module(m, device, &mod);
  if (MC_FAILED(mst)) return mst;
  cache_lock();
  size_t count = m->nnamed;
  unresolved *todo = calloc(count ? count : 1, sizeof *todo);
  size_t n = 0;
  if (todo)
    for (kernel_entry *e = m->named; e; e = e->next) note_unresolved(e, device, todo, &n);
  pthread_mutex_unlock(&g_cache.lock);
  if (!todo) return MC_FAIL("mgpuLaunchKernel", MC_E_NO_MEMORY);
  mc_status st = MC_OK;
  size_t done = 0;
  for (; done < n; ++done) {
    CUresult r = mc_cu.cuModuleGetFunction(&todo[done].fn, mod, todo[done].name);
    if (r != 0) {
      st = MC_FAIL("cuModuleGetFunction", r);
      break;
    }
    MC_STAT_INC(function_resolves);
  }
  cache_lock(); /* m is held: its slots are still its own */
  for (size_t i = 0; i < done; ++i) {
    uint64_t *w = fslot(todo[i].slot);
    if (!__atomic_load_n(&w[FN_WORD(device)], __ATOMIC_ACQUIRE))
      __atomic_store_n(&w[FN_WORD(device)], (uint64_t)(uintptr_t)todo[i].fn, __ATOMIC_RELEASE);
  }
  if (!MC_FAILED(st)) __atomic_store_n(&m->resolved[device], 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&g_cache.lock);
  free(todo);
  return st;
}

/* The calling thread's default device, if the cache covers it (else -1). */
static int thread_device(void) {
  int device = mc_thread_device();
  return device >= 0 && device < mc_device_count() && device < ndev() ? device : -1;
}

/* Resolve every kernel of m known so far on `device` (its first launch there, or a kernel found
 * later on a device where the module already ran), entering its context. Failures are not fatal
 * here: the launch resolves again and reports. The caller holds m. */
static void resolve_on(module_rec *m, int device) {
  mc_ctx_scope scope;
  mc_status st = mc_ctx_enter(device, &scope);
  if (!MC_FAILED(st)) {
    st = resolve_module(m, device);
    mc_ctx_leave(&scope);
  }
  if (MC_FAILED(st)) mc_debug("resolution on device %d failed: %s", device, st.call);
}

/* ---- loading ---- */

/* CUDA_FORCE_PTX_JIT set (and not "0"): the driver compiles a fatbin's PTX, never its cubins.
 * Read once, as the driver reads it once (at cuInit); later changes are not followed. */
static int g_ptx_jit_forced = -1; /* atomic: -1 not read yet */

static int ptx_jit_forced(void) {
  int f = __atomic_load_n(&g_ptx_jit_forced, __ATOMIC_RELAXED);
  if (f < 0) {
    const char *v = mc_config_foreign_env("CUDA_FORCE_PTX_JIT");
    f = v && *v && strcmp(v, "0") != 0;
    __atomic_store_n(&g_ptx_jit_forced, f, __ATOMIC_RELAXED);
  }
  return f;
}

/* Check the blob and load it into the driver, in the primary context of the calling thread's
 * device (as the stock wrapper's cuModuleLoadData): a new, unpublished record.
 * No lock held. On failure after the driver load, *out is the record to discard(). */
static mc_status load_new(const void *blob, int jit, int opt_level, module_rec **out, char *log,
                          size_t log_size) {
  const char *where = jit ? "mgpuModuleLoadJIT" : "mgpuModuleLoad";
  *out = NULL;
  int n = ndev();
  /* Where the blob lies is looked for first, before the driver reads it (see hit_is_same): in a
   * read-only segment of a loaded object its bytes up to the segment's end are readable (no
   * probe) and stay as they are while the generation holds (no copy needed for hits). */
  char object[128];
  size_t avail = 0;
  int in_main = 0;
  uint64_t ro = mc_rodata_lookup(blob, &avail, object, sizeof object, &in_main);
  /* The blob's format and length from its header; every byte read is first known readable. */
  size_t len = 0;
  mc_blob_kind kind = mc_blob_identify_in(blob, avail, &len); /* avail: 0 unless in rodata */
  if (kind == MC_BLOB_CORRUPT) return MC_FAIL(where, MC_E_BAD_IMAGE);
  module_rec *m = calloc(1, sizeof *m);
  if (m) {
    m->resolved = calloc((size_t)n, 1);
    m->mods = calloc((size_t)n, sizeof *m->mods);
    m->mod_epoch = calloc((size_t)n, sizeof *m->mod_epoch);
  }
  if (!m || !m->resolved || !m->mods || !m->mod_epoch) {
    if (m) rec_free(&m->reclaim);
    return MC_FAIL(where, MC_E_NO_MEMORY);
  }
  m->key = blob;
  m->jit = jit;
  m->opt_level = opt_level;
  /* Whether the image has module-scope state (blob_state.h): a large image is scanned beside the
   * driver load, on a helper thread; a small one at mc_blob_state_finish. */
  int classify = kind != MC_BLOB_UNKNOWN && len;
  /* The copy it may need (see below: more than one device, or hits to compare) is made by the
   * scan too, beside the driver load for a large image (0.94 MB at the first call of a 301-kernel
   * module on a machine with two GPUs): always with more than one device, else only if the image
   * is stateless (a stateful one is not cached, so not compared). */
  int in_ro = len && len <= avail;
  /* in the executable's read-only data: never compared, whatever its size (nothing to read) */
  int forever = in_ro && in_main && mc_config()->hit_check == 0;
  int may_skip = in_ro && mc_config()->hit_check == 0 && (len >= MC_HIT_SKIP_MIN_BYTES || forever);
  unsigned char *early = classify && (n > 1 || !may_skip) ? mc_copy_alloc_like(blob, len) : NULL;
  int device = mc_thread_device();
  /* A fatbin's verdict can skip the entries the device does not load (blob_state.h): its
   * architecture is asked for (once per device) only where that saves a decompression. The
   * verdict is the record's on every device, so only where every device has that architecture,
   * and not where CUDA_FORCE_PTX_JIT makes the driver compile the PTX whatever cubin there is. */
  int sm = classify && !ptx_jit_forced() && mc_blob_state_wants_sm(blob, len, kind)
               ? mc_device_sm(0)
               : 0;
  for (int d = 1; sm && d < n; ++d)
    if (mc_device_sm(d) != sm) sm = 0;
  mc_blob_state_scan scan;
  if (classify) mc_blob_state_start(&scan, blob, len, kind, sm, early, n > 1);
  mc_ctx_scope scope;
  mc_status st = mc_ctx_enter(device, &scope); /* fails for a device out of range */
  uint32_t epoch = 0;
  CUmodule mod = NULL;
  CUresult r = 0;
  if (!MC_FAILED(st)) {
    epoch = epoch_of(device); /* before the load: a reset meanwhile makes it stale */
    r = driver_load(m, blob, &mod, log, log_size);
    mc_ctx_leave(&scope);
  }
  int stateful = classify ? mc_blob_state_finish(&scan) : 0;
  if (early && !scan.copied) { /* not wanted after all (a stateful image on one device) */
    mc_copy_free(early);
    early = NULL;
  }
  if (MC_FAILED(st) || r != 0) {
    mc_copy_free(early);
    rec_free(&m->reclaim);
    return MC_FAILED(st) ? st : MC_FAIL(load_call(m), r);
  }
  m->home = device;
  m->mods[device] = mod;
  m->mod_epoch[device] = epoch;
  *out = m;
  /* A module with module-scope state is never cached (blob_state.h): every load of it is a
   * driver load, as with the stock library. Decided from the image (all len bytes readable, as
   * mc_blob_identify checked), once per driver load. */
  if (stateful) {
    MC_STAT_INC(module_stateful_loads);
    mc_debug("%s blob %p (%zu bytes) has module-scope state: not cached", mc_blob_kind_name(kind),
             blob, len);
    kind = MC_BLOB_UNKNOWN;
  }
  /* A cacheable blob of at least MC_HIT_SKIP_MIN_BYTES wholly inside a read-only segment needs no
   * copy for its hits (hit_is_same); any other cacheable blob is copied for them. */
  int skip_hits = kind != MC_BLOB_UNKNOWN && may_skip;
  if (skip_hits || (kind == MC_BLOB_UNKNOWN && in_ro)) m->ro_generation = ro; /* image_of too */
  m->ro_forever = skip_hits && forever;
  if (skip_hits)
    mc_debug("blob %p lies in a read-only segment of %s: its hits are not compared while no "
             "object is unloaded", blob, object[0] ? object : "the executable");
  int copy_for_hits = kind != MC_BLOB_UNKNOWN && !skip_hits;
  /* With more than one device the module may be loaded on another one later, when the caller's
   * bytes may be gone: a copy, of the length the blob's header gives (HIP: an offload bundle's). */
  int copy_for_devices = n > 1;
  size_t copy_len = len ? len : copy_for_devices ? mc_blob_code_object_length(blob) : 0;
  /* Copied once the driver accepted the bytes (their extent was checked readable), unless the
   * scan copied them already. */
  if ((copy_for_hits || copy_for_devices) && copy_len) {
    if (early && copy_len == len) {
      m->copy = early;
      early = NULL;
    } else if ((m->copy = mc_copy_alloc_like(blob, copy_len)) != NULL) {
      memcpy(m->copy, blob, copy_len);
    }
  }
  mc_copy_free(early);
  if (copy_for_hits && !m->copy) kind = MC_BLOB_UNKNOWN; /* without a copy: simply not cached */
  else if (copy_for_hits)
    mc_debug("blob %p (%zu bytes) is compared with its copy at every hit (%s)", blob, len,
             mc_same_bytes_kind());
  if (kind == MC_BLOB_UNKNOWN) len = 0;
  m->len = len;
  m->kind = kind;
  return MC_OK;
}

/* A loaded record that was never published: unload and free it. No lock held. */
static void discard(module_rec *m) {
  unload_modules(m);
  rec_free(&m->reclaim);
}

static inflight *find_inflight_locked(const void *key, int jit, int opt_level) {
  for (inflight *f = g_cache.loading; f; f = f->next)
    if (f->key == key && f->jit == jit && f->opt_level == opt_level) return f;
  return NULL;
}

static void remove_inflight_locked(inflight *me) {
  inflight **pp = &g_cache.loading;
  while (*pp && *pp != me) pp = &(*pp)->next;
  if (*pp) *pp = me->next;
  pthread_cond_broadcast(&g_cache.loaded);
}

/* Whether the blob at m's address is still the one m was loaded from, for a hit; m is held. A blob
 * found in a read-only segment of a loaded object under the generation that is still current
 * cannot have changed: not compared. Otherwise compared with the copy (none: kept without one and
 * an object was unloaded since, so not known to be the same); a blob that was in such a
 * segment is looked for again first, so the generation recorded after an equal comparison is one
 * under which the compared bytes were already in place (looked for after, a dlclose and dlopen in
 * between could put a different blob there and have it recorded as checked). Lock-free: racing
 * hits store generations that each held when their comparison ran; an older one stored last only
 * costs a comparison more. It counts in sb, the calling thread's counters (mc_stats_mine). */
static inline __attribute__((always_inline)) int hit_is_same(module_rec *m, const void *blob,
                                                              mc_stats_block *sb) {
  if (m->ro_forever) { /* the executable's read-only data: no loader lock, no comparison */
    MC_STAT_INC_IN(sb, verify_skips);
    MC_STAT_INC_IN(sb, verify_skips_executable);
    return 1;
  }
  uint64_t g = __atomic_load_n(&m->ro_generation, __ATOMIC_ACQUIRE);
  if (g && mc_rodata_generation() == g) {
    MC_STAT_INC_IN(sb, verify_skips);
    return 1;
  }
  if (!m->copy) return 0; /* an object was unloaded since: the bytes cannot be compared */
  uint64_t now = g ? mc_rodata_find(blob, m->len, NULL, 0) : 0;
  mc_stat_add_in(sb, MC_STAT_verify_bytes, (int64_t)m->len);
  if (!mc_blob_same(m->copy, m->len, m->kind, blob)) return 0;
  if (g) __atomic_store_n(&m->ro_generation, now, __ATOMIC_RELEASE);
  return 1;
}

static mc_status module_load_slow(const void *blob, int jit, int opt_level, mc_module **out,
                                  char *log, size_t log_size) __attribute__((noinline));

mc_status mc_module_load(const void *blob, int jit, int opt_level, mc_module **out, char *log,
                         size_t log_size) {
  *out = NULL;
  /* this thread's cache first: no lock, one thread-local look-up (its counters are the entry's).
   * A live entry exists only under an initialised runtime (a fork child's are cleared). The rest
   * lies in a function of its own, out of the hit's code. */
  tcache *tc = tl_tc;
  if (tc && blob && tc_load(tc, blob, jit, opt_level, out)) return MC_OK;
  return module_load_slow(blob, jit, opt_level, out, log, log_size);
}

/* mc_module_load past this thread's cache. */
static mc_status module_load_slow(const void *blob, int jit, int opt_level, mc_module **out,
                                  char *log, size_t log_size) {
  const char *where = jit ? "mgpuModuleLoadJIT" : "mgpuModuleLoad";
  mc_status st = blob ? mc_runtime_init() : MC_OK;
  mc_stats_block *sb = mc_stats_mine();
  MC_STAT_INC_IN(sb, module_loads);
  if (!blob) return MC_FAIL(where, MC_E_NULL_ARGUMENT);
  if (MC_FAILED(st)) return st;
  if (!mc_cu.cuModuleLoadData || !mc_cu.cuModuleLoadDataEx || !mc_cu.cuModuleUnload ||
      !mc_cu.cuModuleGetFunction)
    return MC_FAIL("cuModuleLoadData", MC_E_UNSUPPORTED);

  module_rec *grave = NULL;
  inflight me = {blob, jit, opt_level, NULL};
  cache_lock();
  setup_locked();
  for (;;) {
    /* The table is searched by address: no byte of the blob is read under the lock. */
    module_rec *m = find_locked(blob, jit, opt_level);
    if (m) {
      hold_locked(m);
      m->refs++; /* held while the bytes are compared outside the lock: never retired meanwhile */
      pthread_mutex_unlock(&g_cache.lock);
      if (hit_is_same(m, blob, sb)) {
        MC_STAT_INC_IN(sb, module_hits);
        cache_lock(); /* this thread's next loads of it: from its cache */
        if (m->in_table) tc_install_locked(m);
        pthread_mutex_unlock(&g_cache.lock);
        *out = (mc_module *)(uintptr_t)m->handle;
        return MC_OK;
      }
      /* A different blob now lives at this address: the old module must never be returned. */
      cache_lock();
      m->refs--;
      if (m->in_table) {
        MC_STAT_INC(module_stale);
        mc_debug("blob at %p changed (was %zu bytes): replacing its module", blob, m->len);
        unlink_locked(m);
      }
      release_locked(m, &grave);
      continue; /* the table may have changed while the lock was released */
    }
    if (find_inflight_locked(blob, jit, opt_level)) { /* wait for that load, then look again */
      pthread_cond_wait(&g_cache.loaded, &g_cache.lock);
      continue;
    }
    break;
  }
  me.next = g_cache.loading;
  g_cache.loading = &me;
  pthread_mutex_unlock(&g_cache.lock);
  bury(grave);

  /* A miss: checked and loaded (the JIT included) without the lock. */
  module_rec *m = NULL;
  st = load_new(blob, jit, opt_level, &m, log, log_size);

  cache_lock();
  remove_inflight_locked(&me);
  if (!MC_FAILED(st) && publish_locked(m) != 0) st = MC_FAIL(where, MC_E_NO_MEMORY);
  if (!MC_FAILED(st)) {
    m->refs = 1;
    if (m->kind != MC_BLOB_UNKNOWN) {
      size_t b = bucket_of(blob);
      m->next = g_cache.buckets[b];
      g_cache.buckets[b] = m;
      __atomic_store_n(&m->in_table, 1, __ATOMIC_RELEASE);
      tc_install_locked(m);
    }
  }
  pthread_mutex_unlock(&g_cache.lock);
  if (MC_FAILED(st)) {
    if (m) discard(m);
    return st;
  }
  mc_debug("loaded %s blob %p (%zu bytes)", mc_blob_kind_name(m->kind), blob, m->len);
  MC_STAT_INC(module_misses);
  *out = (mc_module *)(uintptr_t)m->handle;
  return MC_OK;
}

/* Release one reference of module handle h under the lock: one of the record's references, else
 * one load counted in a thread's entry (loaded in another thread), else the handle is stale.
 * programs: the program's own mgpuModuleUnload (0: the library backing out of a hit). */
static mc_status locked_unload(uint64_t h, int programs) {
  module_rec *grave = NULL;
  mc_status st = MC_OK;
  cache_lock();
  mc_slot_state s;
  module_rec *m = module_of(h, &s);
  if (!m) {
    st = handle_error("mgpuModuleUnload", s);
  } else if (m->refs > 0) {
    m->refs--;
    m->callers_mode = programs && !m->refs && !m->pins && !m->in_table; /* retires it */
    release_locked(m, &grave);
  } else if (!take_thread_load_locked(m)) {
    st = MC_FAIL("mgpuModuleUnload", MC_E_STALE_HANDLE);
  }
  pthread_mutex_unlock(&g_cache.lock);
  bury(grave);
  return st;
}

mc_status mc_module_unload(mc_module *module) {
  uint64_t h = (uint64_t)(uintptr_t)module;
  /* The unload of a load this thread's cache answered: its entry's count, no lock. The module
   * stays cached (an entry exists only while it is in the table): nothing else to do. */
  tcache *tc = tl_tc;
  MC_STAT_INC_IN(tc ? tc->stats : mc_stats_mine(), module_unloads);
  if (!h) return MC_FAIL("mgpuModuleUnload", MC_E_NULL_ARGUMENT);
  tc_entry *e = tc_find(tc, h);
  if (e && tc_unload(e)) return MC_OK;
  return locked_unload(h, 1);
}

/* Pin the live record of handle h (its driver modules stay loaded until unpin). Lock held. */
static module_rec *pin_locked(uint64_t h, mc_slot_state *s) {
  module_rec *m = module_of(h, s);
  if (m) {
    hold_locked(m);
    m->pins++;
  }
  return m;
}

static module_rec *pin(uint64_t h, mc_slot_state *s) {
  cache_lock();
  module_rec *m = pin_locked(h, s);
  pthread_mutex_unlock(&g_cache.lock);
  return m;
}

/* A kernel asked for by name for the first time: looked up (cuModuleGetFunction, no lock held, m
 * pinned) in m's module on the calling thread's device (where the module was first loaded if
 * the thread's device is not one the cache covers), which finds unknown names, as the stock
 * wrapper's cuModuleGetFunction; and on every other device where m's kernels were resolved for
 * a launch, so its launches there make no lazy load. fns[d]: 0 where not resolved (its first
 * launch there resolves it). The failure on the thread's device (an unknown name, a broken
 * context, no memory, a module that cannot be loaded there) is returned: the look-up fails, as
 * stock's does; elsewhere the launch reports it. */
static mc_status resolve_new(module_rec *m, const char *name, int device, CUfunction *fns) {
  int n = ndev(), check = device >= 0 ? device : m->home;
  mc_status mine = MC_OK;
  for (int d = 0; d < n; ++d) {
    if (d != check && !__atomic_load_n(&m->resolved[d], __ATOMIC_ACQUIRE)) continue;
    mc_ctx_scope scope;
    mc_status st = mc_ctx_enter(d, &scope);
    if (!MC_FAILED(st)) {
      CUmodule mod = NULL;
      st = device_module(m, d, &mod);
      CUresult r = MC_FAILED(st) ? 0 : mc_cu.cuModuleGetFunction(&fns[d], mod, name);
      if (r != 0) st = MC_FAIL("cuModuleGetFunction", r);
      if (!MC_FAILED(st)) MC_STAT_INC(function_resolves);
      mc_ctx_leave(&scope);
    }
    if (MC_FAILED(st)) fns[d] = NULL;
    if (d == check) mine = st;
  }
  return mine;
}

/* A function found again: when it has no CUfunction on the calling thread's device yet (a load
 * or look-up from another device than its first), m's kernels are resolved there now, not at a
 * launch. One thread-local and one atomic load when it has one. */
static void resolve_for_thread(uint64_t fh) {
  int device = thread_device();
  if (device < 0) return;
  uint64_t *w = NULL;
  if (mc_slot_find(&g_functions, fh, (void **)&w) != MC_SLOT_LIVE ||
      __atomic_load_n(&w[FN_WORD(device)], __ATOMIC_ACQUIRE))
    return;
  mc_slot_state s = MC_SLOT_STALE;
  cache_lock();
  module_rec *m = mc_slot_find(&g_functions, fh, (void **)&w) == MC_SLOT_LIVE
                      ? pin_locked(__atomic_load_n(&w[0], __ATOMIC_ACQUIRE), &s)
                      : NULL;
  pthread_mutex_unlock(&g_cache.lock);
  if (!m) return;
  resolve_on(m, device);
  unpin(m);
}

/* This thread's entry for handle h while it is live (not revoked: the record is in the table, so
 * h is live and so are the handles of the kernels looked up in it), else NULL. The loads counted
 * there may be none: LLVM >= 21 code loads its module once, in a constructor, and looks its
 * kernel up before every launch. */
static tc_entry *tc_live(tcache *tc, uint64_t h) {
  tc_entry *e = tc_find(tc, h);
  return e && !(__atomic_load_n(&e->state, __ATOMIC_ACQUIRE) & TC_REVOKED) ? e : NULL;
}

/* The same bytes: `kept` (NUL-terminated, shorter than TC_NAME_BYTES) and `name`, compared up to
 * the first difference, so no byte of `name` past its end is read. */
static int same_name(const char *kept, const char *name) {
  for (size_t i = 0;; ++i) {
    if (kept[i] != name[i]) return 0;
    if (!kept[i]) return 1;
  }
}

/* A look-up answered from this thread's entry (tc_entry.fns): the handle is live (the entry is
 * not revoked), the name the same bytes at the same address as one of the entry's look-ups, on
 * the same device, where that function was resolved. No lock, no shared read beyond the entry's
 * state word. 0: the full way. */
static int tc_get_function(tcache *tc, uint64_t h, const char *name, mc_function **out) {
  tc_entry *e = tc_live(tc, h);
  if (!e) return 0;
  for (int i = 0; i < TC_FNS; ++i) {
    const struct tc_fn *fn = &e->fns[i];
    if (fn->handle && fn->ptr == name && same_name(fn->name, name)) {
      /* fn->device is a device the cache covers (tc_note_function notes no other), and those
       * never change while the entry lives: the same device number is thread_device()'s answer */
      if (fn->device != mc_thread_device()) return 0;
      MC_STAT_INC_IN(tc->stats, function_lookups);
      MC_STAT_INC_IN(tc->stats, function_thread_hits);
      *out = (mc_function *)(uintptr_t)fn->handle;
      return 1;
    }
  }
  return 0;
}

/* Remember a look-up in this thread's entry for h, if it has a live one. */
static void tc_note_function(uint64_t h, const char *name, uint64_t fh) {
  tc_entry *e = tc_live(tl_tc, h);
  size_t n = strlen(name);
  int device = thread_device();
  if (!e || n >= TC_NAME_BYTES || device < 0) return; /* a device the cache does not cover: not */
  struct tc_fn *fn = NULL;
  for (int i = 0; i < TC_FNS && !fn; ++i)
    if (e->fns[i].handle && e->fns[i].ptr == name) fn = &e->fns[i]; /* the same address again */
  if (!fn) fn = &e->fns[e->fn_next++ % TC_FNS];
  memcpy(fn->name, name, n + 1);
  fn->ptr = name;
  fn->device = device;
  fn->handle = fh;
}

static mc_status get_function_slow(uint64_t h, const char *name, mc_function **out)
    __attribute__((noinline));

mc_status mc_module_get_function(mc_module *module, const char *name, mc_function **out) {
  *out = NULL;
  uint64_t h = (uint64_t)(uintptr_t)module;
  /* this thread's entry: one thread-local look-up (it counts through the entry's counters); the
   * rest in a function of its own, out of the hit's code */
  if (h && name && tc_get_function(tl_tc, h, name, out)) return MC_OK;
  return get_function_slow(h, name, out);
}

/* mc_module_get_function past this thread's entry. */
static mc_status get_function_slow(uint64_t h, const char *name, mc_function **out) {
  MC_STAT_INC(function_lookups);
  if (!h || !name) return MC_FAIL("mgpuModuleGetFunction", MC_E_NULL_ARGUMENT);
  uint64_t nh = hash_name(name);
  /* Lock-free: the record is read inside a reclamation read section, so it is not freed under
   * us even if the module is retired meanwhile (then the handle found reads as stale). */
  mc_reclaim_enter();
  mc_slot_state s;
  module_rec *m = module_of(h, &s);
  if (m && !mc_slot_still(&g_modules, h)) m = NULL, s = MC_SLOT_STALE;
  kernel_entry *e = m ? find_entry(m, name, nh) : NULL;
  uint64_t fh = e ? e->handle : 0;
  mc_reclaim_exit();
  if (!m) return handle_error("mgpuModuleGetFunction", s);
  if (fh) {
    resolve_for_thread(fh);
    tc_note_function(h, name, fh);
    *out = (mc_function *)(uintptr_t)fh;
    return MC_OK;
  }
  /* The first look-up of this name: asked of the driver (unknown names fail here) and resolved,
   * the module pinned and the lock released. */
  m = pin(h, &s);
  if (!m) return handle_error("mgpuModuleGetFunction", s);
  int n = ndev();
  CUfunction fns_small[8] = {0}, *fns = n <= 8 ? fns_small : calloc((size_t)n, sizeof *fns);
  mc_status st = fns ? resolve_new(m, name, thread_device(), fns) : MC_OK;
  cache_lock();
  if (MC_FAILED(st)) {
    /* reported as the driver's refusal */
  } else if (!fns) {
    st = MC_FAIL("mgpuModuleGetFunction", MC_E_NO_MEMORY);
  } else if ((e = find_entry(m, name, nh)) == NULL) { /* not added by a racing thread */
    e = calloc(1, sizeof *e);
    if (!e || entry_init(e, name) != 0 ||
        publish_entry_locked(e, m->handle, m->kind == MC_BLOB_UNKNOWN, fns) != 0) {
      if (e) free(e->name);
      free(e);
      e = NULL;
      st = MC_FAIL("mgpuModuleGetFunction", MC_E_NO_MEMORY);
    } else {
      add_entry_locked(m, e);
    }
  }
  if (e) fh = e->handle;
  pthread_mutex_unlock(&g_cache.lock);
  if (fns != fns_small) free(fns);
  unpin(m);
  if (!MC_FAILED(st)) {
    tc_note_function(h, name, fh);
    *out = (mc_function *)(uintptr_t)fh;
  }
  return st;
}

/* First launch of f on `device` (its context current): resolve the module's kernels there. */
static mc_status resolve_for_launch(uint64_t fh, int device) {
  cache_lock();
  uint64_t *w = NULL;
  mc_slot_state s = mc_slot_find(&g_functions, fh, (void **)&w);
  module_rec *m = NULL;
  if (s == MC_SLOT_LIVE) m = pin_locked(__atomic_load_n(&w[0], __ATOMIC_ACQUIRE), &s);
  pthread_mutex_unlock(&g_cache.lock);
  if (!m) return handle_error("mgpuLaunchKernel", s);
  mc_status st = resolve_module(m, device);
  unpin(m);
  return st;
}

/* Raise f's dynamic shared memory limit on `device` to smem. The raises of all kernels are
 * serialised, so the driver's limit only grows and the recorded one is the driver's. */
static mc_status raise_smem(uint64_t fh, uint64_t *w, int device, int smem, CUfunction cf) {
  int optin = 0;
  mc_status st = mc_device_max_smem_optin(device, &optin);
  if (MC_FAILED(st)) return st;
  if (optin < smem) /* the stock wrapper's warning; the launch goes ahead as there */
    mc_message("Requested shared memory (%dkb) is larger than maximum allowed shared memory "
               "(%dkb) for this device", smem, optin);
  uint64_t gen = mc_slot_gen(fh);
  uint64_t *word = &w[SMEM_WORD(ndev(), device)];
  pthread_mutex_lock(&g_smem_lock);
  uint64_t cur = __atomic_load_n(word, __ATOMIC_ACQUIRE);
  CUresult r = 0;
  if (!mc_slot_still(&g_functions, fh)) {
    st = MC_FAIL("mgpuLaunchKernel", MC_E_STALE_HANDLE);
  } else if ((cur >> 32) != gen || (int64_t)(uint32_t)cur < smem) {
    r = mc_cu.cuFuncSetAttribute(cf, MC_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem);
    if (r == 0) {
      /* Fails only if the slot was reused meanwhile: then nothing is recorded for the new one. */
      __atomic_compare_exchange_n(word, &cur, gen << 32 | (uint32_t)smem, 0, __ATOMIC_RELEASE,
                                  __ATOMIC_RELAXED);
      MC_STAT_INC(smem_attribute_sets);
    }
  }
  pthread_mutex_unlock(&g_smem_lock);
  if (r != 0) return MC_FAIL("cuFuncSetAttribute", r);
  return st;
}

int mc_function_live(const mc_function *f) {
  uint64_t h = (uint64_t)(uintptr_t)f;
  return h && mc_slot_still(&g_functions, h);
}

mc_status mc_function_prepare(mc_function *f, int device, int smem, CUfunction *out,
                               int *transient, mc_ctx_scope *scope) {
  uint64_t h = (uint64_t)(uintptr_t)f;
  if (!h) { /* as stock: a NULL function goes to the driver, which reports it (stream path) */
    *out = NULL;
    *transient = 1;
    return MC_OK;
  }
  uint64_t *w = NULL;
  mc_slot_state s = mc_slot_find(&g_functions, h, (void **)&w);
  if (s != MC_SLOT_LIVE) return handle_error("mgpuLaunchKernel", s);
  int n = ndev();
  if (device < 0 || device >= n) return MC_FAIL("cuDeviceGet", MC_E_BAD_DEVICE);
  CUfunction cf = (CUfunction)(uintptr_t)__atomic_load_n(&w[FN_WORD(device)], __ATOMIC_ACQUIRE);
  uint64_t sm = __atomic_load_n(&w[SMEM_WORD(n, device)], __ATOMIC_ACQUIRE);
  *transient = (int)(__atomic_load_n(&w[FLAGS_WORD(n)], __ATOMIC_ACQUIRE) & FN_TRANSIENT);
  if (!mc_slot_payload_still(w, h)) return MC_FAIL("mgpuLaunchKernel", MC_E_STALE_HANDLE);
  if (!cf) { /* first launch on this device: resolve every kernel of the module here */
    mc_status st = scope ? mc_ctx_settle(scope) : MC_OK;
    if (!MC_FAILED(st)) st = resolve_for_launch(h, device);
    if (MC_FAILED(st)) return st;
    cf = (CUfunction)(uintptr_t)__atomic_load_n(&w[FN_WORD(device)], __ATOMIC_ACQUIRE);
    sm = __atomic_load_n(&w[SMEM_WORD(n, device)], __ATOMIC_ACQUIRE);
    if (!mc_slot_payload_still(w, h) || !cf)
      return MC_FAIL("mgpuLaunchKernel", MC_E_STALE_HANDLE);
  }
  uint64_t gen = mc_slot_gen(h);
  if (smem > 0 && ((sm >> 32) != gen || (int64_t)(uint32_t)sm < smem)) {
    mc_status st = scope ? mc_ctx_settle(scope) : MC_OK;
    if (!MC_FAILED(st)) st = raise_smem(h, w, device, smem, cf);
    if (MC_FAILED(st)) return st;
  }
  *out = cf;
  return MC_OK;
}

/* ---- fork ---- */

void mc_module_cache_fork_prepare(void) {
  cache_lock();
  pthread_mutex_lock(&g_smem_lock);
  mc_reclaim_fork_prepare();
}

void mc_module_cache_fork_parent(void) {
  mc_reclaim_fork_parent();
  pthread_mutex_unlock(&g_smem_lock);
  pthread_mutex_unlock(&g_cache.lock);
}

void mc_module_cache_fork_child(void) {
  mc_reclaim_fork_child();
  /* The forking thread's cache holds the parent's records: emptied (the other threads' caches
   * were the parent's: gone with them, never touched here). */
  if (tl_tc) memset(tl_tc, 0, sizeof *tl_tc);
  pthread_mutex_unlock(&g_smem_lock);
  pthread_mutex_unlock(&g_cache.lock);
  /* Threads waiting for a load, and the loads in flight, were the parent's: gone here. */
  pthread_cond_init(&g_cache.loaded, NULL);
  g_cache.loading = NULL;
  /* Every record of the parent is forgotten: its driver modules are never used or unloaded here
   * (the driver's objects belong to the parent), its memory is not freed. */
  memset(g_cache.buckets, 0, sizeof g_cache.buckets);
  g_cache.idle_head = g_cache.idle_tail = NULL;
  g_cache.nidle = 0;
  mc_slot_table_fork_child(&g_modules);   /* the parent's handles read as stale */
  mc_slot_table_fork_child(&g_functions);
}

/* ---- ROCm-only export (abi_rocm.c): globals of a cached module ---- */

mc_status mc_module_get_global(mc_module *module, const char *name, void **ptr, size_t *bytes) {
  uint64_t h = (uint64_t)(uintptr_t)module;
  if (!h || !name) return MC_FAIL("mgpuModuleGetGlobal", MC_E_NULL_ARGUMENT);
  if (!mc_cu_extra.cuModuleGetGlobal) {
    mc_slot_state s = mc_slot_find(&g_modules, h, NULL);
    if (s != MC_SLOT_LIVE) return handle_error("mgpuModuleGetGlobal", s);
    return MC_FAIL("cuModuleGetGlobal", MC_E_UNSUPPORTED);
  }
  mc_slot_state s;
  module_rec *m = pin(h, &s);
  if (!m) return handle_error("mgpuModuleGetGlobal", s);
  /* The module on the calling thread's device (loaded there first if needed), as the stock
   * wrapper's cuModuleGetGlobal on the module it loaded in that device's context. */
  int device = mc_thread_device();
  mc_ctx_scope scope;
  mc_status st = mc_ctx_enter(device, &scope); /* fails for a device out of range */
  CUdeviceptr d = 0;
  size_t n = 0;
  CUresult r = 0;
  if (!MC_FAILED(st)) {
    CUmodule mod = NULL;
    st = device_module(m, device, &mod);
    if (!MC_FAILED(st)) r = mc_cu_extra.cuModuleGetGlobal(&d, &n, mod, name);
    mc_ctx_leave(&scope);
  }
  if (!MC_FAILED(st) && r == 0) {
    /* The program may write the module's state through this address: the module is no longer
     * handed out to a later load (it leaves the table; its last release unloads it). */
    cache_lock();
    if (m->in_table) {
      unlink_locked(m);
      MC_STAT_INC(module_global_uncached);
      mc_debug("global %s of blob %p handed out: its module is no longer cached", name, m->key);
    }
    pthread_mutex_unlock(&g_cache.lock);
  }
  unpin(m);
  if (MC_FAILED(st)) return st;
  if (r != 0) return MC_FAIL("cuModuleGetGlobal", r);
  if (ptr) *ptr = (void *)(uintptr_t)d;
  if (bytes) *bytes = n;
  return MC_OK;
}

/* ---- faults (issue 19 item 5): a device's primary context was reset (context.h) ----
 * Every record leaves the hash table, so no later load hits a module resolved in the dead
 * context (records span devices: all of them go; other devices load theirs once more). Cached
 * modules nobody holds are forgotten: never unloaded (some of their driver modules belong to the
 * dead context), their memory leaked. The device's epoch moves on: the driver modules of records
 * the program still holds that were loaded in the dead context are never used (a later need there,
 * e.g. a kernel asked for, loads the blob again in the new context) or unloaded. Kernels already
 * resolved there report the driver's CONTEXT_IS_DESTROYED, as stock's do; the records' unload
 * retires them as usual. */
void mc_module_cache_forget_device(int device) {
  cache_lock();
  /* The device's driver modules of every record (held ones included) belong to the dead context:
   * never used (a later need there loads the module again) or unloaded from now on. */
  if (device >= 0 && device < MC_MAX_DEVICES)
    __atomic_store_n(&g_module_epoch[device], g_module_epoch[device] + 1, __ATOMIC_RELEASE);
  for (size_t b = 0; b < MC_BUCKETS; ++b) {
    while (g_cache.buckets[b]) {
      module_rec *m = g_cache.buckets[b];
      idle_remove_locked(m);
      unlink_locked(m);
    }
  }
  pthread_mutex_unlock(&g_cache.lock);
}
