/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* memory.h - memory operations in the cached mode: the stock wrapper's driver calls, made in the
 * calling thread's default device's context (the caller's current context is restored after).
 * Operations on a stream the caller gave need no context; the NULL stream gets the device's.
 * mgpuMemAlloc / mgpuMemFree go through the caching allocator (allocator.h) unless
 * MGPU_CACHED_ALLOCATOR=0. */
#ifndef MGPU_CACHED_MEMORY_H
#define MGPU_CACHED_MEMORY_H

#include <stddef.h>
#include <stdint.h>

#include "platform/cuda_api.h"
#include "support/status.h"

mc_status mc_mem_alloc(uint64_t bytes, CUstream stream, int host_shared, void **out);
mc_status mc_mem_free(void *ptr, CUstream stream);

/* Wait for the thread's default device (cuCtxSynchronize in its context, in the caller's thread
 * and capture mode): the implicit device wait of the stock cuMemFree / cuModuleUnload, made only
 * with MGPU_CACHED_STOCK_SYNC=1 (mgpuMemFree with a stream, mgpuModuleUnload). */
mc_status mc_device_drain(void);
mc_status mc_memcpy(void *dst, void *src, size_t bytes, CUstream stream);
mc_status mc_memset32(void *dst, uint32_t value, size_t count, CUstream stream);
mc_status mc_memset16(void *dst, uint16_t value, size_t count, CUstream stream);
mc_status mc_host_register(void *ptr, uint64_t bytes);
mc_status mc_host_unregister(void *ptr);

/* Byte size and start of a dense memref (StridedMemRefType<char, rank>), as the stock wrapper
 * computes them for mgpuMemHostRegisterMemRef / UnregisterMemRef; `who` names the entry point in
 * the error status. */
mc_status mc_memref_dense_extent(const char *who, int64_t rank, const void *descriptor,
                                 int64_t element_bytes, void **ptr, uint64_t *bytes);

#endif
