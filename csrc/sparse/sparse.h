/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* sparse.h - the cuSPARSE operations behind the sparse mgpu* entry points (cuSPARSELt: sparselt.h).
 *
 * Same arguments and semantics as upstream's CudaRuntimeWrappers.cpp (MLIR_ENABLE_CUDA_CUSPARSE,
 * LLVM 19, 22 and main); every function returns a status, abi_sparse.c reports it.
 *
 * Cached mode: cuSPARSE handles are made once and reused, one per (device, driver stream) in
 * use: a call takes an idle handle already set to the driver stream its stream argument resolves
 * to (pool.h: mc_stream_use_begin), else makes one (cusparseCreate in the device's primary
 * context) and sets its stream. So the work runs on the program's stream, in order with the
 * program's copies and launches on it (the stock wrapper ignores the stream argument and runs
 * everything on the legacy NULL stream). mgpuCreateSparseEnv loads the library and warms a handle;
 * mgpuDestroySparseEnv keeps the handles for the next environment. An empty CSR result of SpGEMM
 * gets zeroed row offsets before cuSPARSE reads them (see sparse.c).
 *
 * Stock mode (MGPU_CACHED_DISABLE=1): the stock wrapper's calls: one process-wide handle made by
 * mgpuCreateSparseEnv in the frozen stock context and destroyed by mgpuDestroySparseEnv, no stream
 * set (the NULL stream), no context for the operations.
 *
 * Locking: the handle table is guarded by g_sp_lock (sparse.c); no library call is made under it.
 */
#ifndef MGPU_CACHED_SPARSE_H
#define MGPU_CACHED_SPARSE_H

#include <stdint.h>

#include "platform/cuda_api.h"
#include "support/status.h"

mc_status mc_sparse_env_create(void);
mc_status mc_sparse_env_destroy(void);
mc_status mc_sparse_create_dnvec(intptr_t size, void *values, int32_t dtp, void **out);
mc_status mc_sparse_destroy_dnvec(void *v);
mc_status mc_sparse_create_dnmat(intptr_t rows, intptr_t cols, void *values, int32_t dtp,
                                 void **out);
mc_status mc_sparse_destroy_dnmat(void *m);
mc_status mc_sparse_create_coo(intptr_t rows, intptr_t cols, intptr_t nnz, void *row_idxs,
                               void *col_idxs, void *values, int32_t itp, int32_t dtp, void **out);
mc_status mc_sparse_create_coo_aos(intptr_t rows, intptr_t cols, intptr_t nnz, void *idxs,
                                   void *values, int32_t itp, int32_t dtp, void **out);
mc_status mc_sparse_create_csr(intptr_t rows, intptr_t cols, intptr_t nnz, void *pos, void *idxs,
                               void *values, int32_t ptp, int32_t itp, int32_t dtp, void **out);
mc_status mc_sparse_create_csc(intptr_t rows, intptr_t cols, intptr_t nnz, void *pos, void *idxs,
                               void *values, int32_t ptp, int32_t itp, int32_t dtp, void **out);
mc_status mc_sparse_create_bsr(intptr_t brows, intptr_t bcols, intptr_t bnnz, intptr_t rbsz,
                               intptr_t cbsz, void *pos, void *idxs, void *values, int32_t ptp,
                               int32_t itp, int32_t dtp, void **out);
mc_status mc_sparse_destroy_spmat(void *m);
mc_status mc_sparse_spmv_buffer_size(int32_t ma, void *a, void *x, void *y, int32_t ctp,
                                     CUstream stream, intptr_t *out);
mc_status mc_sparse_spmv(int32_t ma, void *a, void *x, void *y, int32_t ctp, void *buf,
                         CUstream stream);
mc_status mc_sparse_spmm_buffer_size(int32_t ma, int32_t mb, void *a, void *b, void *c,
                                     int32_t ctp, CUstream stream, intptr_t *out);
mc_status mc_sparse_spmm(int32_t ma, int32_t mb, void *a, void *b, void *c, int32_t ctp, void *buf,
                         CUstream stream);
mc_status mc_sparse_sddmm_buffer_size(int32_t ma, int32_t mb, void *a, void *b, void *c,
                                      int32_t ctp, CUstream stream, intptr_t *out);
mc_status mc_sparse_sddmm(int32_t ma, int32_t mb, void *a, void *b, void *c, int32_t ctp,
                          void *buf, CUstream stream);
mc_status mc_sparse_spgemm_create_descr(void **out);
mc_status mc_sparse_spgemm_destroy_descr(void *d);
mc_status mc_sparse_spgemm_work_estimation(void *d, int32_t ma, int32_t mb, void *a, void *b,
                                           void *c, int32_t ctp, intptr_t bs, void *buf,
                                           CUstream stream, intptr_t *out);
mc_status mc_sparse_spgemm_compute(void *d, int32_t ma, int32_t mb, void *a, void *b, void *c,
                                   int32_t ctp, intptr_t bs, void *buf, CUstream stream,
                                   intptr_t *out);
mc_status mc_sparse_spgemm_copy(void *d, int32_t ma, int32_t mb, void *a, void *b, void *c,
                                int32_t ctp, CUstream stream);
mc_status mc_sparse_spmat_get_size(void *m, void *rows, void *cols, void *nnz);
mc_status mc_sparse_set_csr_pointers(void *m, void *pos, void *idxs, void *values);

/* fork(): the child forgets the parent's handles (no library call). */
void mc_sparse_fork_prepare(void);
void mc_sparse_fork_parent(void);
void mc_sparse_fork_child(void);

#endif
