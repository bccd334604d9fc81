/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* stock.h - the stock behaviour (MGPU_CACHED_DISABLE=1): every mgpu* call makes the same driver
 * calls as upstream's CudaRuntimeWrappers.cpp (LLVM 19-22 / 2026 main), in the same order, and
 * reports errors the same way. Used for A/B runs; nothing is cached here. */
#ifndef MGPU_CACHED_STOCK_H
#define MGPU_CACHED_STOCK_H

#include <stddef.h>
#include <stdint.h>

#include "platform/cuda_api.h"

/* upstream's ScopedContext: push / pop the frozen stock context (for stock-mode sparse calls). */
void mc_stock_scope_push(void);
void mc_stock_scope_pop(void);

CUmodule mc_stock_module_load(void *data);
CUmodule mc_stock_module_load_jit(void *data, int opt_level);
void mc_stock_module_unload(CUmodule module);
CUfunction mc_stock_module_get_function(CUmodule module, const char *name);
void mc_stock_launch_kernel(CUfunction f, intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx,
                            intptr_t by, intptr_t bz, int32_t smem, CUstream stream,
                            void **params, void **extra);
void mc_stock_launch_ex(CUfunction f, const intptr_t grid[3], const intptr_t cluster[3],
                        const intptr_t block[3], int32_t smem, CUstream stream, void **params,
                        void **extra, int cooperative);
CUstream mc_stock_stream_create(void);
void mc_stock_stream_destroy(CUstream stream);
void mc_stock_stream_synchronize(CUstream stream);
void mc_stock_stream_wait_event(CUstream stream, CUevent event);
CUevent mc_stock_event_create(void);
void mc_stock_event_destroy(CUevent event);
void mc_stock_event_synchronize(CUevent event);
void mc_stock_event_record(CUevent event, CUstream stream);
void *mc_stock_mem_alloc(uint64_t bytes, CUstream stream, int host_shared);
void mc_stock_mem_free(void *ptr, CUstream stream);
void mc_stock_memcpy(void *dst, void *src, size_t bytes, CUstream stream);
void mc_stock_memset32(void *dst, unsigned int value, size_t count, CUstream stream);
void mc_stock_memset16(void *dst, unsigned short value, size_t count, CUstream stream);
void mc_stock_host_register(void *ptr, uint64_t bytes);
void mc_stock_host_unregister(void *ptr);
void mc_stock_tensor_map_encode_tiled(CUtensorMap *map, int data_type, uint32_t rank, void *address,
                                      const uint64_t *dims, const uint64_t *strides,
                                      const uint32_t *box, const uint32_t *element_strides,
                                      int interleave, int swizzle, int l2, int oob);
void *mc_stock_tensor_map_encode_tiled_memref(int64_t rank, void *descriptor, int data_type,
                                              int interleave, int swizzle, int l2, int oob,
                                              int64_t *box_dims);

#endif
