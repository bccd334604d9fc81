/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* stock_hip.h - the stock ROCm wrapper's behaviour (MGPU_CACHED_DISABLE=1 on the HIP backend):
 * the same HIP calls as upstream's RocmRuntimeWrappers.cpp, in the same order, reported the same
 * way. stock.c calls these when the HIP backend is chosen. */
#ifndef MGPU_CACHED_STOCK_HIP_H
#define MGPU_CACHED_STOCK_HIP_H

#include <stddef.h>
#include <stdint.h>

#include "platform/cuda_api.h"

CUmodule mc_stock_hip_module_load(void *data);
CUmodule mc_stock_hip_module_load_jit(void *data, int opt_level);
void mc_stock_hip_module_unload(CUmodule module);
CUfunction mc_stock_hip_module_get_function(CUmodule module, const char *name);
void mc_stock_hip_module_get_global(void **devPtr, size_t *bytes, CUmodule module,
                                    const char *name);
void mc_stock_hip_launch_kernel(CUfunction function, intptr_t gridX, intptr_t gridY,
                                intptr_t gridZ, intptr_t blockX, intptr_t blockY, intptr_t blockZ,
                                int32_t smem, CUstream stream, void **params, void **extra);
void mc_stock_hip_launch_ex(CUfunction function, const intptr_t grid[3], const intptr_t cluster[3],
                            const intptr_t block[3], int32_t smem, CUstream stream, void **params,
                            void **extra, int cooperative);
CUstream mc_stock_hip_stream_create(void);
void mc_stock_hip_stream_destroy(CUstream stream);
void mc_stock_hip_stream_synchronize(CUstream stream);
void mc_stock_hip_stream_wait_event(CUstream stream, CUevent event);
CUevent mc_stock_hip_event_create(void);
void mc_stock_hip_event_destroy(CUevent event);
void mc_stock_hip_event_synchronize(CUevent event);
void mc_stock_hip_event_record(CUevent event, CUstream stream);
void *mc_stock_hip_mem_alloc(uint64_t sizeBytes);
void mc_stock_hip_mem_free(void *ptr);
void mc_stock_hip_memcpy(void *dst, void *src, size_t sizeBytes, CUstream stream);
void mc_stock_hip_memset32(void *dst, int value, size_t count, CUstream stream);
void mc_stock_hip_memset16(void *dst, unsigned short value, size_t count, CUstream stream);
void mc_stock_hip_host_register(void *ptr, uint64_t sizeBytes);
void mc_stock_hip_host_unregister(void *ptr);
/* mgpuMemGetDeviceMemRef1d*: hipSetDevice(0), then hipHostGetDevicePointer. */
void *mc_stock_hip_device_pointer(void *hostPtr);

#endif
