/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* reclaim.c - epoch-based deferred reclamation (see reclaim.h for the rule and the locking). */
#include "support/reclaim.h"

#include <pthread.h>
#include <stdlib.h>

#include "support/thread_exit.h"

typedef struct reader {
  uint64_t active;      /* epoch announced by the thread in a section, 0 outside; atomic */
  int used;             /* owned by a live thread; atomic (claimed with a CAS) */
  struct reader *next;  /* registry list; written before the record is pushed, immutable */
} __attribute__((aligned(64))) reader;

static pthread_mutex_t g_reclaim_lock = PTHREAD_MUTEX_INITIALIZER; /* guards g_retired, epoch advances */
static uint64_t g_reclaim_epoch = 1;             /* atomic; only advanced under g_reclaim_lock */
static reader *g_readers;                /* registry, pushed lock-free, never shrinks */
static mc_reclaim_node *g_retired;       /* objects waiting to be freed; g_reclaim_lock */

static _Thread_local reader *tl_reader;  /* this thread's record */

/* At thread exit (thread_exit.h, run by the exiting thread): the record may serve another thread
 * from now on; a later section of this thread (another hand-back) takes a record again. */
static void release_reader(void *p) {
  reader *r = p;
  tl_reader = NULL;
  __atomic_store_n(&r->active, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&r->used, 0, __ATOMIC_RELEASE);
}

/* This thread's record: a free one claimed, or a new one pushed. NULL if memory ran out. */
static reader *my_reader(void) {
  reader *r = tl_reader;
  if (r) return r;
  for (r = __atomic_load_n(&g_readers, __ATOMIC_ACQUIRE); r; r = r->next) {
    int expected = 0;
    if (__atomic_compare_exchange_n(&r->used, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
      break;
  }
  if (!r) {
    r = aligned_alloc(64, sizeof *r);
    if (!r) return NULL;
    r->active = 0;
    r->used = 1;
    r->next = __atomic_load_n(&g_readers, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(&g_readers, &r->next, r, 1, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED)) {
    }
  }
  /* Without a key (none left) the record stays with this thread's slot for ever: still correct. */
  (void)mc_thread_exit_set(MC_EXIT_RECLAIM, release_reader, r);
  tl_reader = r;
  return r;
}

static int g_no_reader; /* a thread without a record reads anyway: nothing is freed from then on */

void mc_reclaim_enter(void) {
  reader *r = my_reader();
  if (!r) {
    __atomic_store_n(&g_no_reader, 1, __ATOMIC_SEQ_CST);
    return;
  }
  __atomic_exchange_n(&r->active, __atomic_load_n(&g_reclaim_epoch, __ATOMIC_SEQ_CST), __ATOMIC_SEQ_CST);
}

void mc_reclaim_exit(void) {
  reader *r = tl_reader;
  if (r) __atomic_store_n(&r->active, 0, __ATOMIC_RELEASE);
}

/* Move the epoch on if every reader in a section announced the current one. g_reclaim_lock held. */
static void try_advance(void) {
  uint64_t e = __atomic_load_n(&g_reclaim_epoch, __ATOMIC_SEQ_CST);
  for (reader *r = __atomic_load_n(&g_readers, __ATOMIC_ACQUIRE); r; r = r->next) {
    uint64_t a = __atomic_load_n(&r->active, __ATOMIC_SEQ_CST);
    if (a && a != e) return;
  }
  __atomic_store_n(&g_reclaim_epoch, e + 1, __ATOMIC_SEQ_CST);
}

void mc_reclaim_retire(mc_reclaim_node *node) {
  pthread_mutex_lock(&g_reclaim_lock);
  node->epoch = __atomic_load_n(&g_reclaim_epoch, __ATOMIC_SEQ_CST);
  node->next = g_retired;
  g_retired = node;
  try_advance();
  try_advance(); /* a quiet process frees at once: two steps when no reader is in a section */
  uint64_t e = __atomic_load_n(&g_reclaim_epoch, __ATOMIC_SEQ_CST);
  mc_reclaim_node *done = NULL, **pp = &g_retired;
  if (__atomic_load_n(&g_no_reader, __ATOMIC_SEQ_CST)) pp = NULL; /* never safe again: leak */
  while (pp && *pp) {
    mc_reclaim_node *n = *pp;
    if (n->epoch + 2 <= e) {
      *pp = n->next;
      n->next = done;
      done = n;
    } else {
      pp = &n->next;
    }
  }
  pthread_mutex_unlock(&g_reclaim_lock);
  while (done) {
    mc_reclaim_node *n = done;
    done = n->next;
    n->free_fn(n);
  }
}

void mc_reclaim_fork_prepare(void) { pthread_mutex_lock(&g_reclaim_lock); }

void mc_reclaim_fork_parent(void) { pthread_mutex_unlock(&g_reclaim_lock); }

void mc_reclaim_fork_child(void) {
  pthread_mutex_unlock(&g_reclaim_lock);
  g_retired = NULL; /* the parent's retired objects are forgotten (never freed in the child) */
  for (reader *r = g_readers; r; r = r->next) {
    if (r == tl_reader) continue; /* the forking thread keeps its record */
    r->active = 0;
    r->used = 0;
  }
}
