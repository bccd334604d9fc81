/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* tensor_map.c - TMA descriptor argument preparation (see tensor_map.h). No state. */
#include "launch/tensor_map.h"

#include <string.h>

#include "memory/memref.h"

/* Element size of each CUtensorMapDataType, as in the stock wrapper. */
static const int k_element_bytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};

mc_status mc_tmap_args_from_memref(int64_t rank, const void *descriptor, int data_type,
                                   const int64_t *box_dims, mc_tmap_args *a) {
  if (!descriptor || !box_dims) return MC_FAIL("mgpuTensorMapEncodeTiledMemref", MC_E_NULL_ARGUMENT);
  if (rank < 1 || rank > 5) /* the stock wrapper's limit */
    return MC_FAIL("mgpuTensorMapEncodeTiledMemref", MC_E_BAD_ARGUMENT);
  if (data_type < 0 || data_type >= (int)(sizeof k_element_bytes / sizeof *k_element_bytes))
    return MC_FAIL("mgpuTensorMapEncodeTiledMemref", MC_E_BAD_ARGUMENT);
  const mc_memref_desc *d = descriptor;
  const int64_t *sizes = d->sizes_and_strides, *strides = d->sizes_and_strides + rank;
  memset(a, 0, sizeof *a);
  for (int i = 0; i < 5; ++i) {
    a->global_dim[i] = 1;
    a->box_dim[i] = 1;
    a->element_strides[i] = 1;
  }
  a->address = d->data;
  a->rank = (uint32_t)rank;
  for (int64_t i = 0; i < rank; ++i) a->global_dim[i] = (uint64_t)sizes[rank - i - 1];
  for (int64_t i = 0; i < rank - 1; ++i)
    a->global_strides[i] = (uint64_t)(strides[rank - i - 2] * k_element_bytes[data_type]);
  for (int64_t i = 0; i < rank; ++i) a->box_dim[i] = (uint32_t)box_dims[rank - i - 1];
  return MC_OK;
}
