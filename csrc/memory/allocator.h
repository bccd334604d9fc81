/* allocator.h - the caching allocator behind mgpuMemAlloc / mgpuMemFree (cached mode).
 *
 * Per device, device memory (cuMemAlloc) and host_shared memory (cuMemAllocManaged, attach global)
 * are kept in two pools of size classes (4 classes per power of two from 512 B, so at most 25%
 * rounding). The rule: a block freed through mgpuMemFree is handed out again only where a fresh
 * cuMemAlloc block would be as safe, because the stock cuMemFree waits for the whole device and a
 * fresh block reads as zeros:
 *
 *   - freed with the NULL stream: the free waits for the device (cuCtxSynchronize, as the stock
 *     cuMemFree does) and enqueues the block's clearing memset (unless
 *     MGPU_CACHED_ALLOCATOR_ZERO=0) without waiting for it; the block is handed out once a later
 *     call proves the memset done (the next NULL-stream free's wait, a query of the clearing
 *     stream by an allocation that finds no ready block, a sync of that stream).
 *   - freed on a stream: the free makes no driver call (the first one of a device starts the
 *     reclaimer and makes the device's clearing stream). The block waits in the device's pending
 *     list with a free sequence number; the device's reclaimer thread (allocator.c) reads the
 *     sequence, calls cuCtxSynchronize in the device's primary context (every stream of the
 *     device, also streams the library never saw, has then finished the work enqueued before those
 *     frees), clears the blocks on a stream of its own, and only then makes them ready.
 *   - an allocation takes only ready blocks, else calls the driver: it never waits for the
 *     program's work (a kernel may wait for a host flag set after the allocation). With
 *     MGPU_CACHED_ALLOCATOR_ORDERED=1 (opt-in), a device allocation with the same stream key may
 *     take a block freed with that key before the reclaimer has cleared it, stream-ordered like
 *     cudaMallocAsync: only safe for programs that follow MLIR's stream-ordered rules (no use of
 *     the new block on another stream or by the host before its stream has reached it). The
 *     caller then clears it on that stream.
 *
 * Bounded: at most MGPU_CACHED_ALLOCATOR_CACHE_BYTES (default 2 GiB) of ready blocks are kept per
 * device, least recently freed given back first; a block bigger than that is allocated at its exact
 * size and never kept. When the driver reports out of memory, the reclaimer gives the device's ready
 * blocks (and the pending ones its next device-wide synchronisation covers) back to the driver while
 * the allocation waits at most MGPU_CACHED_ALLOCATOR_OOM_WAIT_MS (cuMemFree waits for the device,
 * so it never runs on the allocating thread); then the allocation is retried, then retried at the
 * exact size. MGPU_CACHED_ALLOCATOR=0 restores the stock driver calls (memory.c does the switch).
 */
#ifndef MGPU_CACHED_ALLOCATOR_H
#define MGPU_CACHED_ALLOCATOR_H

#include <stdint.h>

#include "platform/cuda_api.h"
#include "support/status.h"

/* Allocate `bytes` (> 0) on `device`; host_shared = managed memory. `stream_key`: the identity of
 * the allocation's stream when it may take a block freed with the same key stream-ordered (only
 * consulted with MGPU_CACHED_ALLOCATOR_ORDERED=1, device memory only), else NULL. `*uncleared` is
 * set to 1 when the block was taken that way and is not cleared yet: the caller clears it on the
 * stream if zeroing is on (the allocator does not know the driver stream behind a key). */
mc_status mc_alloc_get(int device, uint64_t bytes, const void *stream_key, int host_shared,
                       void **out, int *uncleared);

/* A device block the allocator never tracks (a small NULL-stream allocation, memory.c): the stock
 * cuMemAlloc in `device`'s context; if that runs out of memory, the cache is given back as for a
 * cached allocation (the library's kept memory must not make an allocation fail that stock's
 * would not) and the call is made once more. Its free finds no block: cuMemFree, as stock. */
mc_status mc_alloc_untracked(int device, uint64_t bytes, void **out);

/* Free a pointer. `stream_key` NULL: the NULL stream (waits for the device, as cuMemFree); else
 * the identity of the free's stream (matched by later ordered allocations). `foreign`: the free's
 * stream when the library did not create it (an event is recorded on it at the free: the
 * reclaimer's fence covers only the library's streams and the legacy stream), else NULL. `busy`:
 * the free's stream may still run work the block's last user enqueued (a hint for when the
 * reclaimer's round runs, never for whether the block is idle: the fence proves that). Pointers
 * the allocator did not make go to cuMemFree with no context entered, as the stock wrapper's. */
mc_status mc_alloc_put(void *ptr, const void *stream_key, CUstream foreign, int busy);

/* Give every ready block of every device back to the driver now (pool blocks without any wait;
 * others with cuMemFree, which waits for the device), and have the reclaimer give every pending
 * block back once it is proven idle (not waited for). Returns the number of blocks released now. */
mc_status mc_alloc_release_all(uint64_t *released);

/* fork(): the reclaimer threads do not survive it. prepare takes the allocator's lock (so the
 * child never inherits it held), parent releases it, child releases it and resets the allocator to
 * a fresh empty state without any driver call: the parent's blocks, streams and threads are
 * forgotten (leaked, never touched). To be registered with pthread_atfork. */
void mc_alloc_fork_prepare(void);
void mc_alloc_fork_parent(void);
void mc_alloc_fork_child(void);

/* A reset primary context (context.h, mc_ctx_on_reset): forget every block of the device (no
 * driver call). */
void mc_alloc_forget_device(int device);

#endif
