/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* chain.h - opt-in chain replay (MGPU_CACHED_CHAIN=1, issue 12): launches on one of the
 * library's streams are deferred, with copies of their argument values, until the next point
 * where the host or another stream could observe their work; there they are submitted in order.
 * When the same sequence of kernels (the same functions in the same order) is submitted again on
 * a stream (among the last eight segments), a graph of that sequence (a chain of dependent kernel
 * nodes) is made once, and every later submission of that sequence is one cuGraphLaunch, the
 * nodes whose launch changed (grid, block, dynamic shared memory, argument values) updated in
 * place.
 *
 * Observation points flush: every mgpu* entry point except a launch on the stream whose launches
 * are pending and the module look-ups (mgpuModuleLoad, mgpuModuleGetFunction) calls
 * mc_chain_flush() first (abi_cuda.c; every sparse entry point, abi_sparse.c; and
 * mgpu_cached_driver_handle in public_api.c), and the process flushes at exit.
 * So a sync, an event record or wait, a copy, a memset, an allocation or free, a stream or event
 * create/destroy, a launch on another stream all see the deferred work submitted before them.
 * What changes: kernels start later (at the flush instead of at their launch), so a kernel that
 * waits for the host (a flag in host memory the host sets after the launch, without a sync) could
 * wait for ever; and a launch error the driver would report at cuLaunchKernel is reported at the
 * flush (by the call that flushed, named as the failing driver call). Hence off by default.
 *
 * A long chain's first launches are submitted early (head start, chain.c), so the GPU runs them
 * while the host records the rest.
 *
 * Only one stream's launches are pending at a time (a launch on another stream flushes them), and
 * a pending stream holds a use of its handle (pool.h), so its driver stream cannot change or be
 * reclaimed before the flush. Launches that cannot be deferred (not a stream of ours, pinned,
 * `extra` arguments, cooperative or cluster launches, unknown argument sizes) flush and go on.
 */
#ifndef MGPU_CACHED_CHAIN_H
#define MGPU_CACHED_CHAIN_H

#include "platform/cuda_api.h"
#include "launch/graph_launch.h"
#include "platform/context.h"
#include "streams/pool.h"
#include "support/config.h"
#include "support/status.h"

/* MGPU_CACHED_CHAIN=1 and the graph path usable (graph_launch.h). Inline: two loads. */
static inline int mc_chain_enabled(void) { return mc_config()->chain && mc_graph_enabled(); }

/* A module load's context check (context.h, mc_ctx_verify: one cuCtxGetId), made now, or owed
 * while launches are pending: LLVM <= 20 code loads the module before every launch, and
 * a chain of such launches would pay it once per link. It is settled once, before the pending
 * launches are submitted (every flush) and before a launch that is not appended to them uses a
 * kernel (launch.c), so nothing of a reset context is submitted or launched unchecked. A reset
 * found then drops the pending launches (mc_chain_forget_device), as one found at the load
 * would have; a kernel launched later outside the chain is resolved again in the new context
 * (the stock wrapper, had the reset come between its load and its launch, would have failed
 * that launch: the one difference, with chain replay on only). */
void mc_chain_load_verify(int device);
/* Set (under chain.c's lock, before the first launch is made pending) once the process deferred a
 * launch, never reset: until then nothing is pending, owed or unreported, and the inline entry
 * points below return without a call (one load: every launch and every entry point asks). */
extern int mc_chain_used __attribute__((visibility("hidden")));
static inline int mc_chain_quiet(void) {
  return !__atomic_load_n(&mc_chain_used, __ATOMIC_ACQUIRE);
}
void mc_chain_settle_verify_used(void);
mc_status mc_chain_flush_used(void);
mc_status mc_chain_flush_other_used(CUstream handle);

/* Make the checks owed, if any (one atomic load when none is). No lock held. */
static inline void mc_chain_settle_verify(void) {
  if (!mc_chain_quiet()) mc_chain_settle_verify_used();
}

/* Submit whatever is pending (any stream). The status of the first failed driver call, if any. */
static inline mc_status mc_chain_flush(void) {
  return mc_chain_quiet() ? MC_OK : mc_chain_flush_used();
}

/* Before a synchronisation of `handle`: submit whatever is pending (any stream). A chain that
 * ends here, pending on `handle`, leaves `handle` kept (chain.c: its use held, so the chain's
 * next first launch on it is appended with no stream, context or capture work); a stream kept
 * otherwise is let go, as by every other flush. */
mc_status mc_chain_flush_sync_used(CUstream handle);
static inline mc_status mc_chain_flush_sync(CUstream handle) {
  return mc_chain_quiet() ? MC_OK : mc_chain_flush_sync_used(handle);
}

/* Flush unless the pending launches are on `handle` (a launch on it is about to be deferred). */
static inline mc_status mc_chain_flush_other(CUstream handle) {
  return mc_chain_quiet() ? MC_OK : mc_chain_flush_other_used(handle);
}

/* Defer a launch of `cf` (identity `key`) on the library stream `handle`, in use through `use`,
 * in the launch's context scope (context.h: perhaps bare, settled here before the one driver
 * call a deferral can make, the kernel's argument sizes at its first launch). 1: deferred (if it
 * is the first pending launch, the chain takes over `use`: use->rec becomes NULL); *st holds the
 * failure of an earlier pending launch submitted meanwhile, if any. 0: not deferred (pending
 * launches were flushed first: launch it now). */
int mc_chain_defer(CUstream handle, mc_stream_use *use, mc_ctx_scope *scope, const void *key,
                   CUfunction cf, const mc_graph_dims *d, void **params, mc_status *st);

/* The fast path of a launch on the stream whose launches are pending, or which the last chain's
 * synchronisation kept (chain.c; launch.c calls it before anything else): when an earlier
 * pending launch of the same function (`key`) with the same dynamic shared memory lies among the
 * segment's last launches, or the kept chain's memo holds it, this one is appended with that
 * launch's CUfunction and argument sizes (on a kept stream, beginning the segment with the kept
 * use). No driver call, no context and no use of the handle: the segment (or the kept stream)
 * already holds the handle's use, and every call that could pin or destroy the stream flushes
 * first; the function handle is checked to be live (another thread may have unloaded its module
 * since the earlier launch). 1: deferred (the caller counts chain_deferred); 0: take the full
 * path (which may defer it too). */
int mc_chain_append_used(CUstream handle, const void *key, const mc_graph_dims *d, void **params);
static inline int mc_chain_append(CUstream handle, const void *key, const mc_graph_dims *d,
                                  void **params) {
  return !mc_chain_quiet() && mc_chain_append_used(handle, key, d, params);
}

/* A reset primary context (context.h, mc_ctx_on_reset): drop the pending launches and forget
 * every chain exec (no driver call). */
void mc_chain_forget_device(int device);

/* fork(): the child forgets pending launches and chain graphs of the parent (no driver call). */
void mc_chain_fork_prepare(void);
void mc_chain_fork_parent(void);
void mc_chain_fork_child(void);

#endif
