/* sparse.h - the cuSPARSE and cuSPARSELt operations behind the sparse mgpu* entry points.
 *
 * Same arguments and semantics as upstream's CudaRuntimeWrappers.cpp (MLIR_ENABLE_CUDA_CUSPARSE /
 * _CUSPARSELT, LLVM 19, 22 and main); every function returns a status, abi_sparse.c reports it.
 *
 * Cached mode: cuSPARSE handles are made once and reused, one per (device, driver stream) in
 * use: a call takes an idle handle already set to the driver stream its stream argument resolves
 * to (pool.h: mc_stream_use_begin), else makes one (cusparseCreate in the device's primary
 * context) and sets its stream. So the work runs on the program's stream, in order with the
 * program's copies and launches on it (the stock wrapper ignores the stream argument and runs
 * everything on the legacy NULL stream). mgpuCreateSparseEnv loads the library and warms a handle;
 * mgpuDestroySparseEnv keeps the handles for the next environment. cuSPARSELt: one handle per
 * device, made on first use, kept; the matrix structs live in the space the lowering reserves in
 * the caller's frame (44104 bytes per sparse, 11032 per dense matrix): the library's struct size
 * is checked against it on every create (sparse_lib.h: mc_splt_struct_bytes).
 *
 * Stock mode (MGPU_CACHED_DISABLE=1): the stock wrapper's calls: one process-wide cuSPARSE handle
 * made by mgpuCreateSparseEnv in the frozen stock context and destroyed by mgpuDestroySparseEnv,
 * no stream set (the NULL stream), no context for the cuSPARSE operations; one process-wide
 * cuSPARSELt handle, its operations in the stock context (upstream has none, and cuSPARSELt 0.8
 * fails without one: see sparse.c). Both modes translate the lowering's cuSPARSELt compute type to the loaded version's.
 *
 * Locking: the handle table is guarded by g_sp_lock (sparse.c); no library call is made under it.
 */
#ifndef MGPU_CACHED_SPARSE_H
#define MGPU_CACHED_SPARSE_H

#include <stdint.h>

#include "cuda_api.h"
#include "status.h"

/* The bytes the MLIR lowering (LLVM 19-22) reserves in the caller's frame, 16-byte aligned. */
#define MC_SPLT_SPMAT_RESERVED 44104
#define MC_SPLT_DNMAT_RESERVED 11032

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

mc_status mc_sparselt_env_create(void);
mc_status mc_sparselt_env_destroy(void);
mc_status mc_sparselt_create_dnmat(void *dh, intptr_t rows, intptr_t cols, void *values,
                                   int32_t dtp, CUstream stream);
mc_status mc_sparselt_destroy_dnmat(void *dh);
mc_status mc_sparselt_create_2to4_spmat(void *sh, intptr_t rows, intptr_t cols, void *values,
                                        int32_t dtp, CUstream stream);
mc_status mc_sparselt_destroy_spmat(void *sh);
mc_status mc_sparselt_spmm_buffer_size(void *bs, int32_t ma, int32_t mb, void *a, void *b, void *c,
                                       int32_t ctp, int32_t prune_flag, CUstream stream);
mc_status mc_sparselt_spmm(void *a, void *b, void *c, void *workspace, void *compressed,
                           void *compressed_buffer, CUstream stream);

/* fork(): the child forgets the parent's handles (no library call). */
void mc_sparse_fork_prepare(void);
void mc_sparse_fork_parent(void);
void mc_sparse_fork_child(void);

#endif
