/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* sparselt.h - the cuSPARSELt (2:4 structured sparsity) operations behind the sparse mgpu* entry
 * points, with upstream's arguments and semantics (MLIR_ENABLE_CUDA_CUSPARSELT, LLVM 19-22).
 *
 * Cached mode: one cuSPARSELt handle per device, made in its primary context on first use and
 * kept (mgpuDestroySparseLtEnv keeps it for the next environment); calls run on the driver stream
 * their stream argument resolves to (pool.h), the matmul included (upstream passes no stream: the
 * NULL stream). The matrix structs live in the space the MLIR lowering reserves in the caller's
 * frame (MC_SPLT_*_RESERVED); the loaded version's struct size (sparse_lib.h:
 * mc_splt_struct_bytes) is checked against it on every create. The lowering's compute type
 * (cuSPARSELt 0.5 numbering) is translated to the loaded version's. Memory the wrapper itself
 * allocates for the prune check's flag is zeroed (the library writes it only on failure).
 * Where the reserved space has room (cuSPARSELt >= 0.6) the SpMM's plan is kept and reused for
 * the same parameters instead of made and destroyed per call (sparselt_plans.h): a repeated 2:4
 * step then makes no descriptor-of-the-matmul, algorithm-selection or plan call, and no
 * allocation for the prune check's flag.
 *
 * Stock mode (MGPU_CACHED_DISABLE=1): upstream's calls with one process-wide handle, made in the
 * stock context; the operations also run in it (upstream has none, and cuSPARSELt 0.8 fails
 * without a current context: cusparseLtMatmulAlgSelectionInit 'internal error', seen on the H100).
 */
#ifndef MGPU_CACHED_SPARSELT_H
#define MGPU_CACHED_SPARSELT_H

#include <stdint.h>

#include "platform/cuda_api.h"
#include "support/status.h"

/* The bytes the MLIR lowering (LLVM 19-22) reserves in the caller's frame, 16-byte aligned. */
#define MC_SPLT_SPMAT_RESERVED 44104
#define MC_SPLT_DNMAT_RESERVED 11032

mc_status mc_sparselt_env_create(void);
mc_status mc_sparselt_env_destroy(void);
mc_status mc_sparselt_create_dnmat(void *dh, intptr_t rows, intptr_t cols, void *values,
                                   int32_t dtp, CUstream stream);
mc_status mc_sparselt_destroy_dnmat(void *dh);
mc_status mc_sparselt_create_2to4_spmat(void *sh, intptr_t rows, intptr_t cols, void *values,
                                        int32_t dtp, CUstream stream);
/* Cached mode: gives back the kept plan its BufferSize took (sparselt_plans.h); `stream` orders
 * the free of that plan's flag if it is destroyed. */
mc_status mc_sparselt_destroy_spmat(void *sh, CUstream stream);
mc_status mc_sparselt_spmm_buffer_size(void *bs, int32_t ma, int32_t mb, void *a, void *b, void *c,
                                       int32_t ctp, int32_t prune_flag, CUstream stream);
mc_status mc_sparselt_spmm(void *a, void *b, void *c, void *workspace, void *compressed,
                           void *compressed_buffer, CUstream stream);

/* fork(): the child forgets the parent's handles (no library call). */
void mc_sparselt_fork_prepare(void);
void mc_sparselt_fork_parent(void);
void mc_sparselt_fork_child(void);

#endif
