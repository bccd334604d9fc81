/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* abi_sparse.c - the ABI edge for sparse code: every cuSPARSE / cuSPARSELt mgpu* symbol of the
 * stock CUDA wrapper built with MLIR_ENABLE_CUDA_CUSPARSE(LT) (LLVM 19, 22 and main), with its C
 * signature. Thin: sparse.c does the work (both modes), this file reports failures: library
 * statuses in the stock form "cuSPARSE '<call>' failed with '<status string>'", a library that
 * could not be found once with every place searched, the rest as every other entry point.
 * Every trailing CUstream is the library's own stream handle (or a driver stream, or NULL).
 */
#include <stdint.h>
#include <stdio.h>

#include "launch/chain.h"
#include "support/report.h"
#include "sparse/sparse.h"
#include "sparse/sparse_lib.h"
#include "sparse/sparselt.h"

#define MC_EXPORT __attribute__((visibility("default")))

static int report_sparse(const char *where, mc_status st) {
  static int missing_sp, missing_lt;
  if (!MC_FAILED(st)) return 0;
  if (MC_IS_SPARSE_STATUS(st)) {
    fprintf(stderr, "cuSPARSE '%s' failed with '%s'\n", st.call,
            mc_sparse_status_name(st.result - MC_SPARSE_STATUS_BASE));
  } else if (st.result == MC_E_NO_LIBRARY) {
    int lt = st.call && st.call[sizeof "dlopen(cuSPARSE" - 1] == 'L';
    if (__atomic_exchange_n(lt ? &missing_lt : &missing_sp, 1, __ATOMIC_RELAXED)) return 1;
    mc_message("%s: %s could not be loaded; tried: %s. Install the CUDA toolkit's %s, or "
               "`pip install %s`, or set %s to the library's path.",
               where, lt ? "cuSPARSELt (libcusparseLt.so.0)" : "cuSPARSE (libcusparse.so.12)",
               lt ? mc_cusparselt_error() : mc_cusparse_error(), lt ? "cuSPARSELt" : "cuSPARSE",
               lt ? "nvidia-cusparselt-cu13 (or -cu12)" : "nvidia-cusparse (or nvidia-cusparse-cu12)",
               lt ? "MGPU_CACHED_CUSPARSELT" : "MGPU_CACHED_CUSPARSE");
  } else if (st.result == MC_E_TOO_SMALL) {
    mc_message("%s: cuSPARSELt %d.%d.%d needs %zu bytes per opaque struct; the MLIR lowering "
               "reserves %d bytes per sparse matrix (4 structs + a pointer) and %d per dense "
               "matrix (1 struct + a pointer): this cuSPARSELt does not fit the generated code",
               where, mc_cusparselt_version() / 1000, mc_cusparselt_version() / 100 % 10,
               mc_cusparselt_version() % 100, mc_splt_struct_bytes(), MC_SPLT_SPMAT_RESERVED,
               MC_SPLT_DNMAT_RESERVED);
  } else {
    mc_report(where, st, NULL);
  }
  return 1;
}

#define R(where, expr) report_sparse(where, (expr))

/* Opt-in chain replay (chain.h): like every other entry point, a sparse one first submits the
 * launches deferred so far (one atomic load when nothing is pending): its cuSPARSE call may be
 * enqueued on their stream behind them, or read what they write. A failure of theirs is reported
 * under this entry point's name, as abi_cuda.c's CHAIN_FLUSH does. */
#define SP_CHAIN_FLUSH(where) (void)R(where, mc_chain_flush())

MC_EXPORT void mgpuCreateSparseEnv(void) {
  SP_CHAIN_FLUSH("mgpuCreateSparseEnv");
  R("mgpuCreateSparseEnv", mc_sparse_env_create());
}

MC_EXPORT void mgpuDestroySparseEnv(void) {
  SP_CHAIN_FLUSH("mgpuDestroySparseEnv");
  R("mgpuDestroySparseEnv", mc_sparse_env_destroy());
}

MC_EXPORT void *mgpuCreateDnVec(intptr_t size, void *values, int32_t dtp, CUstream stream) {
  SP_CHAIN_FLUSH("mgpuCreateDnVec");
  (void)stream;
  void *v = NULL;
  R("mgpuCreateDnVec", mc_sparse_create_dnvec(size, values, dtp, &v));
  return v;
}

MC_EXPORT void mgpuDestroyDnVec(void *v, CUstream stream) {
  SP_CHAIN_FLUSH("mgpuDestroyDnVec");
  (void)stream;
  R("mgpuDestroyDnVec", mc_sparse_destroy_dnvec(v));
}

MC_EXPORT void *mgpuCreateDnMat(intptr_t rows, intptr_t cols, void *values, int32_t dtp,
                                CUstream stream) {
  SP_CHAIN_FLUSH("mgpuCreateDnMat");
  (void)stream;
  void *m = NULL;
  R("mgpuCreateDnMat", mc_sparse_create_dnmat(rows, cols, values, dtp, &m));
  return m;
}

MC_EXPORT void mgpuDestroyDnMat(void *m, CUstream stream) {
  SP_CHAIN_FLUSH("mgpuDestroyDnMat");
  (void)stream;
  R("mgpuDestroyDnMat", mc_sparse_destroy_dnmat(m));
}

MC_EXPORT void *mgpuCreateCoo(intptr_t rows, intptr_t cols, intptr_t nnz, void *rowIdxs,
                              void *colIdxs, void *values, int32_t itp, int32_t dtp,
                              CUstream stream) {
  SP_CHAIN_FLUSH("mgpuCreateCoo");
  (void)stream;
  void *m = NULL;
  R("mgpuCreateCoo", mc_sparse_create_coo(rows, cols, nnz, rowIdxs, colIdxs, values, itp, dtp, &m));
  return m;
}

MC_EXPORT void *mgpuCreateCooAoS(intptr_t rows, intptr_t cols, intptr_t nnz, void *idxs,
                                 void *values, int32_t itp, int32_t dtp, CUstream stream) {
  SP_CHAIN_FLUSH("mgpuCreateCooAoS");
  (void)stream;
  void *m = NULL;
  R("mgpuCreateCooAoS", mc_sparse_create_coo_aos(rows, cols, nnz, idxs, values, itp, dtp, &m));
  return m;
}

MC_EXPORT void *mgpuCreateCsr(intptr_t rows, intptr_t cols, intptr_t nnz, void *rowPos,
                              void *colIdxs, void *values, int32_t ptp, int32_t itp, int32_t dtp,
                              CUstream stream) {
  SP_CHAIN_FLUSH("mgpuCreateCsr");
  (void)stream;
  void *m = NULL;
  R("mgpuCreateCsr",
    mc_sparse_create_csr(rows, cols, nnz, rowPos, colIdxs, values, ptp, itp, dtp, &m));
  return m;
}

MC_EXPORT void *mgpuCreateCsc(intptr_t rows, intptr_t cols, intptr_t nnz, void *colPos,
                              void *rowIdxs, void *values, int32_t ptp, int32_t itp, int32_t dtp,
                              CUstream stream) {
  SP_CHAIN_FLUSH("mgpuCreateCsc");
  (void)stream;
  void *m = NULL;
  R("mgpuCreateCsc",
    mc_sparse_create_csc(rows, cols, nnz, colPos, rowIdxs, values, ptp, itp, dtp, &m));
  return m;
}

MC_EXPORT void *mgpuCreateBsr(intptr_t brows, intptr_t bcols, intptr_t bnnz, intptr_t rBsz,
                              intptr_t cBsz, void *rowPos, void *colIdxs, void *values,
                              int32_t ptp, int32_t itp, int32_t dtp, CUstream stream) {
  SP_CHAIN_FLUSH("mgpuCreateBsr");
  (void)stream;
  void *m = NULL;
  R("mgpuCreateBsr", mc_sparse_create_bsr(brows, bcols, bnnz, rBsz, cBsz, rowPos, colIdxs, values,
                                          ptp, itp, dtp, &m));
  return m;
}

MC_EXPORT void mgpuDestroySpMat(void *m, CUstream stream) {
  SP_CHAIN_FLUSH("mgpuDestroySpMat");
  (void)stream;
  R("mgpuDestroySpMat", mc_sparse_destroy_spmat(m));
}

MC_EXPORT intptr_t mgpuSpMVBufferSize(int32_t ma, void *a, void *x, void *y, int32_t ctp,
                                      CUstream stream) {
  SP_CHAIN_FLUSH("mgpuSpMVBufferSize");
  intptr_t n = 0;
  R("mgpuSpMVBufferSize", mc_sparse_spmv_buffer_size(ma, a, x, y, ctp, stream, &n));
  return n;
}

MC_EXPORT void mgpuSpMV(int32_t ma, void *a, void *x, void *y, int32_t ctp, void *buf,
                        CUstream stream) {
  SP_CHAIN_FLUSH("mgpuSpMV");
  R("mgpuSpMV", mc_sparse_spmv(ma, a, x, y, ctp, buf, stream));
}

MC_EXPORT intptr_t mgpuSpMMBufferSize(int32_t ma, int32_t mb, void *a, void *b, void *c,
                                      int32_t ctp, CUstream stream) {
  SP_CHAIN_FLUSH("mgpuSpMMBufferSize");
  intptr_t n = 0;
  R("mgpuSpMMBufferSize", mc_sparse_spmm_buffer_size(ma, mb, a, b, c, ctp, stream, &n));
  return n;
}

MC_EXPORT void mgpuSpMM(int32_t ma, int32_t mb, void *a, void *b, void *c, int32_t ctp, void *buf,
                        CUstream stream) {
  SP_CHAIN_FLUSH("mgpuSpMM");
  R("mgpuSpMM", mc_sparse_spmm(ma, mb, a, b, c, ctp, buf, stream));
}

MC_EXPORT intptr_t mgpuSDDMMBufferSize(int32_t ma, int32_t mb, void *a, void *b, void *c,
                                       int32_t ctp, CUstream stream) {
  SP_CHAIN_FLUSH("mgpuSDDMMBufferSize");
  intptr_t n = 0;
  R("mgpuSDDMMBufferSize", mc_sparse_sddmm_buffer_size(ma, mb, a, b, c, ctp, stream, &n));
  return n;
}

MC_EXPORT void mgpuSDDMM(int32_t ma, int32_t mb, void *a, void *b, void *c, int32_t ctp,
                         void *buf, CUstream stream) {
  SP_CHAIN_FLUSH("mgpuSDDMM");
  R("mgpuSDDMM", mc_sparse_sddmm(ma, mb, a, b, c, ctp, buf, stream));
}

MC_EXPORT void *mgpuSpGEMMCreateDescr(CUstream stream) {
  SP_CHAIN_FLUSH("mgpuSpGEMMCreateDescr");
  (void)stream;
  void *d = NULL;
  R("mgpuSpGEMMCreateDescr", mc_sparse_spgemm_create_descr(&d));
  return d;
}

MC_EXPORT void mgpuSpGEMMDestroyDescr(void *s, CUstream stream) {
  SP_CHAIN_FLUSH("mgpuSpGEMMDestroyDescr");
  (void)stream;
  R("mgpuSpGEMMDestroyDescr", mc_sparse_spgemm_destroy_descr(s));
}

MC_EXPORT intptr_t mgpuSpGEMMWorkEstimation(void *s, int32_t ma, int32_t mb, void *a, void *b,
                                            void *c, int32_t ctp, intptr_t bs, void *buf,
                                            CUstream stream) {
  SP_CHAIN_FLUSH("mgpuSpGEMMWorkEstimation");
  intptr_t n = 0;
  R("mgpuSpGEMMWorkEstimation",
    mc_sparse_spgemm_work_estimation(s, ma, mb, a, b, c, ctp, bs, buf, stream, &n));
  return n;
}

MC_EXPORT intptr_t mgpuSpGEMMCompute(void *s, int32_t ma, int32_t mb, void *a, void *b, void *c,
                                     int32_t ctp, intptr_t bsz2, void *buf2, CUstream stream) {
  SP_CHAIN_FLUSH("mgpuSpGEMMCompute");
  intptr_t n = 0;
  R("mgpuSpGEMMCompute", mc_sparse_spgemm_compute(s, ma, mb, a, b, c, ctp, bsz2, buf2, stream, &n));
  return n;
}

MC_EXPORT void mgpuSpGEMMCopy(void *s, int32_t ma, int32_t mb, void *a, void *b, void *c,
                              int32_t ctp, CUstream stream) {
  SP_CHAIN_FLUSH("mgpuSpGEMMCopy");
  R("mgpuSpGEMMCopy", mc_sparse_spgemm_copy(s, ma, mb, a, b, c, ctp, stream));
}

MC_EXPORT void mgpuSpMatGetSize(void *m, void *r, void *c, void *n, CUstream stream) {
  SP_CHAIN_FLUSH("mgpuSpMatGetSize");
  (void)stream;
  R("mgpuSpMatGetSize", mc_sparse_spmat_get_size(m, r, c, n));
}

MC_EXPORT void mgpuSetCsrPointers(void *m, void *p, void *c, void *v, CUstream stream) {
  SP_CHAIN_FLUSH("mgpuSetCsrPointers");
  (void)stream;
  R("mgpuSetCsrPointers", mc_sparse_set_csr_pointers(m, p, c, v));
}

/* ---- cuSPARSELt (2:4 structured sparsity) ---- */

MC_EXPORT void mgpuCreateSparseLtEnv(void) {
  SP_CHAIN_FLUSH("mgpuCreateSparseLtEnv");
  R("mgpuCreateSparseLtEnv", mc_sparselt_env_create());
}

MC_EXPORT void mgpuDestroySparseLtEnv(void) {
  SP_CHAIN_FLUSH("mgpuDestroySparseLtEnv");
  R("mgpuDestroySparseLtEnv", mc_sparselt_env_destroy());
}

MC_EXPORT void mgpuCreateCuSparseLtDnMat(void *dh, intptr_t rows, intptr_t cols, void *values,
                                         int32_t dtp, CUstream stream) {
  SP_CHAIN_FLUSH("mgpuCreateCuSparseLtDnMat");
  R("mgpuCreateCuSparseLtDnMat", mc_sparselt_create_dnmat(dh, rows, cols, values, dtp, stream));
}

MC_EXPORT void mgpuDestroyCuSparseLtDnMat(void *dh, CUstream stream) {
  SP_CHAIN_FLUSH("mgpuDestroyCuSparseLtDnMat");
  (void)stream;
  R("mgpuDestroyCuSparseLtDnMat", mc_sparselt_destroy_dnmat(dh));
}

MC_EXPORT void mgpuCusparseLtCreate2To4SpMat(void *sh, intptr_t rows, intptr_t cols, void *values,
                                             int32_t dtp, CUstream stream) {
  SP_CHAIN_FLUSH("mgpuCusparseLtCreate2To4SpMat");
  R("mgpuCusparseLtCreate2To4SpMat",
    mc_sparselt_create_2to4_spmat(sh, rows, cols, values, dtp, stream));
}

MC_EXPORT void mgpuDestroyCuSparseLtSpMat(void *sh, CUstream stream) {
  SP_CHAIN_FLUSH("mgpuDestroyCuSparseLtSpMat");
  R("mgpuDestroyCuSparseLtSpMat", mc_sparselt_destroy_spmat(sh, stream));
}

MC_EXPORT void mgpuCuSparseLtSpMMBufferSize(void *bs, int32_t ma, int32_t mb, void *a, void *b,
                                            void *c, int32_t ctp, int32_t prune_flag,
                                            CUstream stream) {
  SP_CHAIN_FLUSH("mgpuCuSparseLtSpMMBufferSize");
  R("mgpuCuSparseLtSpMMBufferSize",
    mc_sparselt_spmm_buffer_size(bs, ma, mb, a, b, c, ctp, prune_flag, stream));
}

MC_EXPORT void mgpuCuSparseLtSpMM(void *a, void *b, void *c, void *d_workspace, void *dA_compressed,
                                  void *dA_compressedBuffer, CUstream stream) {
  SP_CHAIN_FLUSH("mgpuCuSparseLtSpMM");
  R("mgpuCuSparseLtSpMM", mc_sparselt_spmm(a, b, c, d_workspace, dA_compressed,
                                           dA_compressedBuffer, stream));
}
