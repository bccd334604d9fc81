/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* tensor_map.h - Hopper TMA descriptors (mgpuTensorMapEncodeTiled / ...TiledMemref): argument
 * preparation shared by the cached and the stock paths. */
#ifndef MGPU_CACHED_TENSOR_MAP_H
#define MGPU_CACHED_TENSOR_MAP_H

#include <stdint.h>

#include "platform/cuda_api.h"
#include "support/status.h"

typedef struct mc_tmap_args {
  char *address;
  uint32_t rank;
  uint64_t global_dim[5], global_strides[5];
  uint32_t box_dim[5], element_strides[5];
} mc_tmap_args;

/* Fill `a` from a ranked memref descriptor (StridedMemRefType<char, rank>) as the stock wrapper
 * does: dimensions innermost first, strides in bytes, element strides 1. */
mc_status mc_tmap_args_from_memref(int64_t rank, const void *descriptor, int data_type,
                                   const int64_t *box_dims, mc_tmap_args *a);

#endif
