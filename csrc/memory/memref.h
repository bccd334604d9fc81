/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* memref.h - the layout of a ranked MLIR memref descriptor (StridedMemRefType<T, rank>), as the
 * generated code passes it to mgpuMemHost*MemRef and mgpuTensorMapEncodeTiledMemref:
 * sizes are sizes_and_strides[0 .. rank-1], strides sizes_and_strides[rank .. 2*rank-1]. */
#ifndef MGPU_CACHED_MEMREF_H
#define MGPU_CACHED_MEMREF_H

#include <stdint.h>

typedef struct mc_memref_desc {
  char *base;                    /* allocated pointer */
  char *data;                    /* aligned pointer */
  int64_t offset;                /* in elements */
  int64_t sizes_and_strides[];   /* [2 * rank] */
} mc_memref_desc;

#endif
