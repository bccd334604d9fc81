/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* reclaim.h - deferred reclamation (epoch based) for objects that threads read without a lock.
 *
 * A reader brackets its lock-free reads with mc_reclaim_enter / mc_reclaim_exit. An object that
 * has been made unreachable for new readers (every pointer to it that readers load cleared with a
 * sequentially consistent store) is handed to mc_reclaim_retire, which frees it once every read
 * section that was open at that time has ended: never while a reader may still hold a pointer to
 * it, and without waiting for readers (the object waits in a list; each later retire frees what
 * has become safe).
 *
 * How: a global epoch; each thread has a record announcing the epoch it entered at (0: not in a
 * section; announced with a sequentially consistent exchange, so a reclaimer that does not see the
 * announcement is seen by the reader's following loads). An object retired at epoch e is freed
 * once the epoch reached e + 2; the epoch moves on only when every thread in a section announced
 * the current one. Read sections are short (a scan of a module's kernel names) and never block.
 * Thread records are reused after their thread exits (a pthread key destructor); they are never
 * freed.
 *
 * Locking: g_reclaim_lock (reclaim.c) guards the list of retired objects and the epoch advance; the
 * record list is pushed lock-free. Readers take no lock. No other lock is taken while g_reclaim_lock is
 * held, and callers do not hold theirs when they call mc_reclaim_retire.
 */
#ifndef MGPU_CACHED_RECLAIM_H
#define MGPU_CACHED_RECLAIM_H

#include <stdint.h>

typedef struct mc_reclaim_node {
  struct mc_reclaim_node *next;          /* the retired list; reclaim.c's lock */
  uint64_t epoch;                        /* epoch at retirement */
  void (*free_fn)(struct mc_reclaim_node *); /* frees the object the node is embedded in */
} mc_reclaim_node;

/* Open / close a read section on the calling thread (sections do not nest). */
void mc_reclaim_enter(void);
void mc_reclaim_exit(void);

/* Free the object of `node` (node->free_fn set by the caller) once no reader can hold it. */
void mc_reclaim_retire(mc_reclaim_node *node);

/* Fork handlers (see module_cache.h): prepare takes the lock, parent releases it, child releases
 * it, forgets the retired list (never freed there) and the read sections of the threads that do
 * not exist in the child. */
void mc_reclaim_fork_prepare(void);
void mc_reclaim_fork_parent(void);
void mc_reclaim_fork_child(void);

#endif
