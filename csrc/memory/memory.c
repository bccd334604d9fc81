/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* memory.c - memory operations in the cached mode (see memory.h): picks the device, the driver
 * stream and the stream keys for the allocator. No state, no lock. */
#include "memory/memory.h"

#include "memory/allocator.h"
#include "support/config.h"
#include "support/stats.h"
#include "platform/context.h"
#include "platform/driver.h"
#include "memory/memref.h"
#include "streams/pool.h"
#include "support/stats.h"
#include "trace/trace.h"

/* Run `expr` (a CUresult expression) in the default device's context. */
#define IN_DEVICE_CONTEXT(callname, expr)                                                         \
  do {                                                                                            \
    mc_ctx_scope scope_;                                                                          \
    mc_status st_ = mc_ctx_enter(mc_thread_device(), &scope_);                                    \
    if (MC_FAILED(st_)) return st_;                                                               \
    CUresult r_ = (expr);                                                                         \
    mc_ctx_leave(&scope_);                                                                        \
    if (r_ != 0) return MC_FAIL(callname, r_);                                                    \
  } while (0)

/* Run `expr` on a caller's stream: a stream of ours as its driver stream (`drv_`), in the context of
 * the device it was made on; the NULL stream and foreign streams in the default device's. Counted
 * as device work (device_ops): a host_shared block it may touch is not freed as untouched. */
#define ON_STREAM(callname, stream, expr)                                                         \
  do {                                                                                            \
    mc_status st0_ = mc_driver_load();                                                            \
    if (MC_FAILED(st0_)) return st0_;                                                             \
    MC_STAT_INC(device_ops);                                                                      \
    mc_stream_use use_;                                                                           \
    st0_ = mc_stream_use_begin((stream), callname, &use_);                                        \
    if (MC_FAILED(st0_)) return st0_;                                                             \
    CUstream drv_ = use_.stream;                                                                  \
    mc_ctx_scope scope_;                                                                          \
    st0_ = mc_ctx_enter(use_.device, &scope_);                                                    \
    CUresult r_ = 0;                                                                              \
    if (!MC_FAILED(st0_)) {                                                                       \
      MC_TRACE_GPU_BEGIN(drv_, use_.device); /* the driver stream the copy is enqueued on */      \
      r_ = (expr);                                                                                \
      MC_TRACE_GPU_END(drv_, r_);                                                                 \
      mc_ctx_leave(&scope_);                                                                      \
    }                                                                                             \
    mc_stream_use_end(&use_);                                                                     \
    if (MC_FAILED(st0_)) return st0_;                                                             \
    if (r_ != 0) return MC_FAIL(callname, r_);                                                    \
  } while (0)

/* Stream keys for the allocator. With MGPU_CACHED_ALLOCATOR_ORDERED=1 a device allocation on one
 * of our live stream handles may take a block freed with that handle stream-ordered (a handle
 * gives up its driver stream only once all its work has completed, pool.h, so its order holds
 * across a rebind); frees on any other stream get k_unordered as their key, which no allocation
 * passes, so they are only reused after the reclaimer's device-wide wait. */
static const char k_unordered;

static const void *ordered_key(const mc_config_t *cfg, CUstream stream) {
  if (!stream || !cfg->allocator_ordered) return NULL;
  return mc_pool_live_kind(stream) == MC_OBJ_STREAM ? (const void *)stream : NULL;
}

mc_status mc_mem_alloc(uint64_t bytes, CUstream stream, int host_shared, void **out) {
  *out = NULL;
  if (bytes == 0) return MC_OK;
  const mc_config_t *cfg = mc_config();
  /* A small device allocation on the NULL stream (MLIR's synchronous gpu.alloc) is stock's: its
   * free(NULL) waits for the device either way, and the driver's cuMemAlloc + cuMemFree of a small
   * block costs less than the clearing a reused block needs (issue 21; docs/allocator.md). Its
   * free finds no block of the allocator's and goes to cuMemFree, as stock. */
  if (cfg->allocator && !stream && !host_shared && bytes <= cfg->allocator_sync_direct_max) {
    mc_status st = mc_alloc_untracked(mc_thread_device(), bytes, out);
    if (!MC_FAILED(st)) MC_STAT_INC(alloc_sync_direct);
    return st;
  }
  if (cfg->allocator) {
    /* On the device of the allocation's stream when it is ours (objects stay on their device),
     * else the thread's default device. */
    int device = mc_handle_device(stream), uncleared = 0;
    mc_status st = mc_alloc_get(device, bytes, host_shared ? NULL : ordered_key(cfg, stream),
                                host_shared, out, &uncleared);
    if (MC_FAILED(st) || !uncleared || !cfg->allocator_zero) return st;
    /* An ordered hit: clear it on its stream, after the old work and before the new. */
    st = mc_memset32(*out, 0, (size_t)((bytes + 3) / 4), stream);
    if (!MC_FAILED(st)) return MC_OK;
    mc_alloc_put(*out, &k_unordered, NULL, 0); /* back to the reclaimer, no driver call */
    *out = NULL;
    return st;
  }
  /* the stock calls: synchronous, the stream is not used */
  CUdeviceptr p = 0;
  if (host_shared)
    IN_DEVICE_CONTEXT("cuMemAllocManaged", mc_cu.cuMemAllocManaged(&p, bytes, MC_CU_MEM_ATTACH_GLOBAL));
  else
    IN_DEVICE_CONTEXT("cuMemAlloc", mc_cu.cuMemAlloc(&p, bytes));
  *out = (void *)(uintptr_t)p;
  return MC_OK;
}

/* The driver stream behind a free's stream when the library did not create it (a foreign stream,
 * CU_STREAM_LEGACY / CU_STREAM_PER_THREAD), else NULL (the NULL stream, a live or destroyed handle
 * of ours: its driver stream is one the reclaimer's fence covers). `kind`: the stream's
 * mc_pool_live_kind. */
static CUstream foreign_stream(CUstream stream, mc_obj_kind kind) {
  if (!stream || kind != MC_OBJ_NONE) return NULL;
  mc_stream_use use;
  if (MC_FAILED(mc_stream_use_begin(stream, "cuMemFree", &use))) return NULL; /* stale: ours */
  CUstream s = use.rec ? NULL : use.stream;
  mc_stream_use_end(&use);
  return s;
}

mc_status mc_device_drain(void) {
  IN_DEVICE_CONTEXT("cuCtxSynchronize", mc_cu.cuCtxSynchronize());
  return MC_OK;
}

mc_status mc_mem_free(void *ptr, CUstream stream) {
  const mc_config_t *cfg = mc_config();
  if (cfg->allocator) {
    const void *key = ordered_key(cfg, stream);
    int busy = 0; /* one look-up: what the stream is, and the reclaimer's timing hint (pool.h) */
    mc_obj_kind kind = stream ? mc_pool_live_kind_busy(stream, &busy) : MC_OBJ_NONE;
    mc_status st = mc_alloc_put(ptr, key ? key : stream ? &k_unordered : NULL,
                                foreign_stream(stream, kind), busy);
    /* MGPU_CACHED_STOCK_SYNC: the device wait the stock cuMemFree makes (the NULL stream's free
     * waits already) */
    if (stream && cfg->stock_sync && !MC_FAILED(st)) mc_device_drain();
    return st;
  }
  IN_DEVICE_CONTEXT("cuMemFree", mc_cu.cuMemFree((CUdeviceptr)(uintptr_t)ptr));
  return MC_OK;
}

mc_status mc_memcpy(void *dst, void *src, size_t bytes, CUstream stream) {
  ON_STREAM("cuMemcpyAsync", stream,
            mc_cu.cuMemcpyAsync((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, bytes,
                                drv_));
  return MC_OK;
}

mc_status mc_memset32(void *dst, uint32_t value, size_t count, CUstream stream) {
  ON_STREAM("cuMemsetD32Async", stream,
            mc_cu.cuMemsetD32Async((CUdeviceptr)(uintptr_t)dst, value, count, drv_));
  return MC_OK;
}

mc_status mc_memset16(void *dst, uint16_t value, size_t count, CUstream stream) {
  ON_STREAM("cuMemsetD16Async", stream,
            mc_cu.cuMemsetD16Async((CUdeviceptr)(uintptr_t)dst, value, count, drv_));
  return MC_OK;
}

mc_status mc_host_register(void *ptr, uint64_t bytes) {
  IN_DEVICE_CONTEXT("cuMemHostRegister", mc_cu.cuMemHostRegister(ptr, bytes, 0));
  return MC_OK;
}

mc_status mc_host_unregister(void *ptr) {
  IN_DEVICE_CONTEXT("cuMemHostUnregister", mc_cu.cuMemHostUnregister(ptr));
  return MC_OK;
}

mc_status mc_memref_dense_extent(const char *who, int64_t rank, const void *descriptor,
                                 int64_t element_bytes, void **ptr, uint64_t *bytes) {
  if (!descriptor) return MC_FAIL(who, MC_E_NULL_ARGUMENT);
  if (rank < 0 || rank > 64 || element_bytes <= 0) return MC_FAIL(who, MC_E_BAD_ARGUMENT);
  const mc_memref_desc *d = descriptor;
  uint64_t n = 1;
  for (int64_t i = 0; i < rank; ++i) n *= (uint64_t)d->sizes_and_strides[i];
  *bytes = n * (uint64_t)element_bytes;
  *ptr = d->data + d->offset * element_bytes;
  return MC_OK;
}
