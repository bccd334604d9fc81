/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* thread_exit.h - one pthread key for every per-thread record of the library: a thread's
 * statistics block (stats.c), its reader record (reclaim.c) and its module cache (module_cache.c)
 * are handed back at the thread's exit through one key's destructor, so the library takes one of
 * the process's PTHREAD_KEYS_MAX (1024) keys, not one per record kind (a process that loads many
 * libraries, or many copies of this one, runs out of keys; without a key the records simply stay
 * with their threads: still correct). */
#ifndef MGPU_CACHED_SUPPORT_THREAD_EXIT_H
#define MGPU_CACHED_SUPPORT_THREAD_EXIT_H

/* The records, in the order their hand-backs run at thread exit (the module cache's may count
 * statistics and read under the reclaimer's protection, so those come after it). */
typedef enum { MC_EXIT_MODULES, MC_EXIT_RECLAIM, MC_EXIT_STATS, MC_EXIT_COUNT } mc_exit_slot;

/* At this thread's exit, run fn(p) once (p non-NULL): the last registration of `slot` wins. A
 * record registered while the thread exits (by a hand-back) is handed back in the same pass when
 * its slot comes later, else in the next destructor round, as glibc repeats them. Returns 0 when
 * the hook is in place, -1 when it is not (no key left, or it could not be set): the record then
 * stays with the thread and the caller keeps it. */
int mc_thread_exit_set(mc_exit_slot slot, void (*fn)(void *), void *p);

#endif
