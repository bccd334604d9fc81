/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* fork.c - fork safety: one pthread_atfork registration that runs every layer's fork hooks.
 *
 * Belongs to the edge layer: it wires the hooks of the layers below it and has no state of its
 * own. Before fork() each layer takes its locks (top layer first, so no thread is left inside a
 * critical section of any of them); in the parent they are released (bottom first); in the child
 * each layer releases them and forgets every object of the parent (no driver call: a child must
 * never use the parent's driver objects), so the child starts like a fresh process and
 * initialises the driver again on its first call.
 * Lock order of the prepare step: module cache, sparse (cuSPARSE, cuSPARSELt), chain replay, graph
 * launches, allocator, pool, HIP backend, context, rodata (whose readers hold no other lock: it
 * waits until no thread is inside dl_iterate_phdr, which glibc's fork does not make safe for the
 * child). No code path takes two
 * of these locks nested in another order (each file's locking rule says which calls it makes
 * under its lock).
 */
#include <pthread.h>

#include "memory/allocator.h"
#include "platform/context.h"
#include "modules/module_cache.h"
#include "launch/chain.h"
#include "launch/graph_launch.h"
#include "streams/pool.h"
#include "support/rodata.h"
#include "sparse/sparse.h"
#include "sparse/sparselt.h"
#include "support/stats.h"
#include "trace/trace.h"

static void prepare(void) {
  mc_module_cache_fork_prepare();
  mc_sparse_fork_prepare();
  mc_sparselt_fork_prepare();
  mc_chain_fork_prepare();
  mc_graph_fork_prepare();
  mc_alloc_fork_prepare();
  mc_pool_fork_prepare();
  mc_context_fork_prepare();
  mc_rodata_fork_prepare();
}

static void parent(void) {
  mc_rodata_fork_parent();
  mc_context_fork_parent();
  mc_pool_fork_parent();
  mc_alloc_fork_parent();
  mc_graph_fork_parent();
  mc_chain_fork_parent();
  mc_sparselt_fork_parent();
  mc_sparse_fork_parent();
  mc_module_cache_fork_parent();
}

static void child(void) {
  mc_trace_fork_child(); /* no lock taken in prepare: its locks are made fresh */
  mc_rodata_fork_child();
  mc_context_fork_child();
  mc_stats_fork_child();
  mc_pool_fork_child();
  mc_alloc_fork_child();
  mc_graph_fork_child();
  mc_chain_fork_child();
  mc_sparselt_fork_child();
  mc_sparse_fork_child();
  mc_module_cache_fork_child();
}

/* glibc's registration under this library's DSO handle (what libc_nonshared's pthread_atfork
 * does), so the handlers go away if the library is dlclose'd: a build against an old glibc links
 * the compatibility pthread_atfork, which would leave dangling handlers behind. Elsewhere (musl,
 * whose dlclose unloads nothing) plain pthread_atfork. */
extern int __register_atfork(void (*)(void), void (*)(void), void (*)(void), void *)
    __attribute__((weak));
extern void *__dso_handle __attribute__((weak, visibility("hidden")));
extern void __cxa_finalize(void *) __attribute__((weak));

__attribute__((constructor)) static void mc_fork_register(void) {
  if (__register_atfork && &__dso_handle)
    __register_atfork(prepare, parent, child, &__dso_handle);
  else
    pthread_atfork(prepare, parent, child);
}

/* At dlclose (and exit): glibc drops the DSO's fork handlers in __cxa_finalize, which gcc's start
 * files call from every shared library; other toolchains' (zig cc) may not, so call it here too
 * (a second call finds nothing left to do). */
__attribute__((destructor)) static void mc_fork_unregister(void) {
  if (__register_atfork && __cxa_finalize && &__dso_handle) __cxa_finalize(&__dso_handle);
}
