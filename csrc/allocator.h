/* allocator.h - the caching allocator behind mgpuMemAlloc / mgpuMemFree (cached mode).
 *
 * Per device, device memory (cuMemAlloc) and host_shared memory (cuMemAllocManaged, attach global)
 * are kept in two pools of size classes (4 classes per power of two from 512 B, so at most 25%
 * rounding). A freed block is kept and handed out again to a later allocation of its class:
 *
 *   - freed on a stream: a pooled event is recorded on that stream. The block is reused once the
 *     event has completed (cuEventQuery), so everything queued on that stream before the free,
 *     including what it waited for, has finished. A *device* allocation on the same stream (one
 *     of our pooled streams) may take it earlier, stream-ordered: work queued on that stream
 *     afterwards runs after the old work. host_shared blocks are only reused once ready, because
 *     the host may touch them as soon as mgpuMemAlloc returns.
 *   - freed with the NULL stream: the stock cuMemFree waits for the device; so does this free
 *     (cuCtxSynchronize), and the block is ready at once.
 *
 * So a pointer from mgpuMemAlloc can be used at once by the host and (for blocks that were ready,
 * which is every host_shared block and every block handed to a NULL-stream or other-stream
 * allocation) by every stream, as with the stock wrapper.
 *
 * Bounded: at most MGPU_CACHED_ALLOCATOR_CACHE_BYTES (default 2 GiB) are kept per device, least
 * recently freed given back first; a block bigger than that is allocated at its exact size and
 * never kept. When the driver reports out of memory, every cached block of the device is given
 * back (waiting for its event first) and the allocation retried, then retried at the exact size.
 * Pointers the allocator did not make go to cuMemFree as before. MGPU_CACHED_ALLOCATOR=0 restores
 * the stock driver calls (memory.c does the switch).
 */
#ifndef MGPU_CACHED_ALLOCATOR_H
#define MGPU_CACHED_ALLOCATOR_H

#include <stdint.h>

#include "cuda_api.h"
#include "status.h"

/* Allocate `bytes` (> 0) on the calling thread's default device; host_shared = managed memory. */
mc_status mc_alloc_get(uint64_t bytes, CUstream stream, int host_shared, void **out);

/* Free a pointer: ours are cached, others go to cuMemFree. */
mc_status mc_alloc_put(void *ptr, CUstream stream);

/* Give every cached block of every device back to the driver (waiting for pending work first).
 * Returns the number of blocks released. */
mc_status mc_alloc_release_all(uint64_t *released);

/* Size class of `bytes`: its index (0..MC_ALLOC_CLASSES-1) and rounded size. Exposed for tests. */
#define MC_ALLOC_CLASSES 224
int mc_alloc_class(uint64_t bytes, uint64_t *class_bytes);

#endif
