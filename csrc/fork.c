/* fork.c - fork safety: one pthread_atfork registration that runs every layer's fork hooks.
 *
 * Belongs to the edge layer: it wires the hooks of the layers below it and has no state of its
 * own. Before fork() each layer takes its locks (top layer first, so no thread is left inside a
 * critical section of any of them); in the parent they are released (bottom first); in the child
 * each layer releases them and forgets every object of the parent (no driver call: a child must
 * never use the parent's driver objects), so the child starts like a fresh process and
 * initialises the driver again on its first call.
 * Lock order of the prepare step: module cache, allocator, chain replay, graph launches, pool, HIP backend, context. No code path takes two
 * of these locks nested in another order (each file's locking rule says which calls it makes
 * under its lock).
 */
#include <pthread.h>

#include "backend.h"
#include "chain.h"
#include "graph_launch.h"
#include "pool.h"

static void prepare(void) {
  mc_chain_fork_prepare();
  mc_graph_fork_prepare();
  mc_pool_fork_prepare();
  mc_hip_fork_prepare();
}

static void parent(void) {
  mc_hip_fork_parent();
  mc_pool_fork_parent();
  mc_graph_fork_parent();
  mc_chain_fork_parent();
}

static void child(void) {
  mc_hip_fork_child();
  mc_pool_fork_child();
  mc_graph_fork_child();
  mc_chain_fork_child();
}

__attribute__((constructor)) static void mc_fork_register(void) {
  pthread_atfork(prepare, parent, child);
}
