/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* graph_launch.h - kernel launches through instantiated one-node graphs (issue 12).
 *
 * A launch through a graph exec (cuGraphExecKernelNodeSetParams + cuGraphLaunch) costs the host
 * less than cuLaunchKernel (~7 us instead of ~9 us per synchronous launch on an H100). For each
 * driver stream of the library's pools and each kernel launched on it, graph_launch.c keeps one
 * instantiated graph whose single node is that kernel (more for a kernel whose launches come back
 * to earlier argument sets: graph_launch.c, "Argument sets"); a launch updates the node's grid, block,
 * dynamic shared memory and argument values (only when one of them changed since the exec's last
 * launch: the values, not the caller's pointers, are compared) and launches the exec on the
 * driver stream. Execs are per driver stream, because the launches of one exec are ordered behind
 * each other even across streams. The argument values are copied by the driver at the update, as
 * cuLaunchKernel copies them at the launch: nothing the program can observe changes.
 *
 * mc_graph_launch never fails: when the path cannot be taken it returns 0 having enqueued
 * nothing, and the caller launches as before (launch.c). MGPU_CACHED_GRAPH=0 turns it off.
 */
#ifndef MGPU_CACHED_GRAPH_LAUNCH_H
#define MGPU_CACHED_GRAPH_LAUNCH_H

#include <stdint.h>
#include <string.h>

#include "platform/cuda_api.h"

typedef struct mc_graph_dims {
  unsigned grid[3], block[3], smem;
} mc_graph_dims;

/* Equality of launch dimensions and of argument bytes on the launch path, inline: no memcmp call.
 * (glibc's AVX-512 memcmp compares fewer than 32 bytes with a masked load, which measured 3x
 * slower per chain link in one link order of the library than in another: the cost depended on
 * where the linker put the compared data.) */
static inline int mc_graph_dims_equal(const mc_graph_dims *a, const mc_graph_dims *b) {
  return a->grid[0] == b->grid[0] && a->grid[1] == b->grid[1] && a->grid[2] == b->grid[2] &&
         a->block[0] == b->block[0] && a->block[1] == b->block[1] &&
         a->block[2] == b->block[2] && a->smem == b->smem;
}

/* Are the n bytes at a and b the same? Compared 8 bytes at a time (arguments are mostly pointers,
 * indices and floats: one or two words). */
static inline int mc_bytes_equal(const void *a, const void *b, size_t n) {
  const unsigned char *x = a, *y = b;
  for (; n >= 8; x += 8, y += 8, n -= 8) {
    uint64_t u, v;
    memcpy(&u, x, 8);
    memcpy(&v, y, 8);
    if (u != v) return 0;
  }
  for (; n; ++x, ++y, --n)
    if (*x != *y) return 0;
  return 1;
}

/* Is the graph path usable at all (switch on, CUDA backend, every entry point present)? Inline,
 * one load, once decided (mc_graph_state_: -1 until graph_launch.c decided it, then 0 or 1). */
extern int mc_graph_state_ __attribute__((visibility("hidden")));
int mc_graph_enabled_slow(void);
static inline int mc_graph_enabled(void) {
  int v = __atomic_load_n(&mc_graph_state_, __ATOMIC_ACQUIRE);
  return v >= 0 ? v : mc_graph_enabled_slow();
}

/* With the graph path on (mc_graph_enabled returned 1), while the process has no exec yet:
 * whether this launch of cf is one of the early ones that take the stream path (see "First
 * launches" in graph_launch.c; counted as graph_first_launches, as mc_graph_launch would). Asked
 * before the capture check, so a process's first launches make no driver call beyond
 * cuLaunchKernel and touch no stream entry. 0 once an exec exists. */
int mc_graph_launch_early(CUfunction cf);
/* Launch `cf` (whose identity for the cache is `key`: the library's never-reused function
 * handle) on the library's driver stream `stream` through that stream's exec for it, the
 * function's device context current, or owed: `scope`, when not NULL, is a bare launch's context
 * scope (context.h), settled before an exec is made or updated; its cuGraphLaunch runs bare (a
 * driver refusing that gets it again, pushed: mc_ctx_bare_retry). 1: launched. 0: nothing
 * enqueued, launch it as before. build = 0 (the caller holds a lock): no exec is made here;
 * *missing (if given) is set when none exists yet, and mc_graph_prepare can make it once the lock
 * is released. */
struct mc_ctx_scope;
int mc_graph_launch(const void *key, CUfunction cf, CUstream stream, const mc_graph_dims *d,
                    void **params, int build, int *missing, struct mc_ctx_scope *scope);

/* While the graph path is on, every launch of the cached mode calls this first (launch.c),
 * whichever path it takes. It returns 1 when the process's last few launches (graph_launch.c:
 * GRAPH_STREAK) were made by this thread: only then may the launch take the graph path. Threads
 * launching side by side do not write a shared word on every launch (graph_launch.c says how).
 * cuGraphLaunch serialises across threads in the driver (H100: 0.79x the driver's launch
 * throughput at 8 threads with graph launches among concurrent ones, 0.93x without), so where
 * several threads launch in turn, their launches take the stream path; a thread that takes over
 * takes the graph path again after a few launches of its own in a row. Results are the same
 * either way: this only chooses the faster path. */
int mc_graph_launch_enter(void);

/* The kernel node parameters of a launch of `cf` (grid, block, dynamic shared memory, arguments). */
void mc_graph_node_params(CUDA_KERNEL_NODE_PARAMS *p, CUfunction cf, const mc_graph_dims *d,
                          void **params);

/* The argument count of `cf` and each argument's size (cuFuncGetParamInfo, CUDA 12.4+) into a new
 * array *sizes (the caller frees it) and their sum *bytes; -1 when unknown (no entry point, a
 * failure, more than MC_GRAPH_MAX_PARAMS arguments, no memory). */
#define MC_GRAPH_MAX_PARAMS 4096
int mc_graph_param_sizes(CUfunction cf, size_t **sizes, size_t *bytes);

/* Make the exec for `cf` on `stream` holding this launch, without launching it (no lock held,
 * the function's device context current). Nothing if it exists or cannot be made. */
void mc_graph_prepare(const void *key, CUfunction cf, CUstream stream, const mc_graph_dims *d,
                      void **params);

/* A reset primary context (context.h, mc_ctx_on_reset): forget every exec (no driver call). */
void mc_graph_forget_device(int device);

/* fork(): the child forgets every exec of the parent (no driver call). */
void mc_graph_fork_prepare(void);
void mc_graph_fork_parent(void);
void mc_graph_fork_child(void);

#endif
