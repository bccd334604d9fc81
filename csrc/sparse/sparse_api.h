/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* sparse_api.h - our own declarations of the cuSPARSE and cuSPARSELt subsets the sparse mgpu*
 * entry points use, as symbol tables (the same X-macro form as cuda_api.h).
 *
 * The library never includes <cusparse.h> or <cusparseLt.h> and never links them: sparse_lib.c
 * dlopens libcusparse / libcusparseLt on first use and resolves these tables into mc_sp / mc_splt.
 * Enumerations travel as int (the generated code passes int32 casts of them already); descriptors
 * and handles are void*. cuSPARSELt's opaque structs are caller-allocated byte arrays whose size
 * depends on the library version (sparse_lib.h: mc_splt_struct_bytes).
 *
 * X(field, exported_name, return, (params), (argument names), required)
 */
#ifndef MGPU_CACHED_SPARSE_API_H
#define MGPU_CACHED_SPARSE_API_H

#include <stddef.h>
#include <stdint.h>

#include "platform/cuda_api.h"

typedef int cusparseStatus_t;  /* CUSPARSE_STATUS_*; cuSPARSELt returns the same type */
typedef struct cusparseContext *cusparseHandle_t;

/* Constants (values from cusparse.h 12.x / cusparseLt.h 0.8; library_types.h). */
#define MC_CUSPARSE_STATUS_NOT_INITIALIZED 1
#define MC_CUSPARSE_STATUS_EXECUTION_FAILED 6
#define MC_CUSPARSE_STATUS_NOT_SUPPORTED 10
#define MC_CUSPARSE_INDEX_BASE_ZERO 0
#define MC_CUSPARSE_ORDER_ROW 2
#define MC_CUSPARSE_SPMV_ALG_DEFAULT 0
#define MC_CUSPARSE_SPMM_ALG_DEFAULT 0
#define MC_CUSPARSE_SDDMM_ALG_DEFAULT 0
#define MC_CUSPARSE_SPGEMM_DEFAULT 0
#define MC_CUDA_R_32F 0
#define MC_CUDA_R_16F 2
#define MC_CUDA_C_32F 4
#define MC_CUDA_C_16F 6
#define MC_CUDA_R_16BF 14
#define MC_CUDA_C_16BF 15
#define MC_LIB_PROPERTY_MAJOR 0
#define MC_LIB_PROPERTY_MINOR 1
#define MC_LIB_PROPERTY_PATCH 2
#define MC_CUSPARSELT_SPARSITY_50_PERCENT 0
#define MC_CUSPARSELT_MATMUL_ALG_DEFAULT 0
#define MC_CUSPARSELT_MATMUL_ALG_CONFIG_ID 0
#define MC_CUSPARSELT_PRUNE_SPMMA_STRIP 1

#define MC_CUSPARSE_SYMBOLS(X)                                                                     \
  X(cusparseGetProperty, cusparseGetProperty, cusparseStatus_t, (int type, int *value),           \
    (type, value), 1)                                                                              \
  X(cusparseGetErrorString, cusparseGetErrorString, const char *, (cusparseStatus_t status),      \
    (status), 1)                                                                                   \
  X(cusparseCreate, cusparseCreate, cusparseStatus_t, (cusparseHandle_t * handle), (handle), 1)   \
  X(cusparseDestroy, cusparseDestroy, cusparseStatus_t, (cusparseHandle_t handle), (handle), 1)   \
  X(cusparseSetStream, cusparseSetStream, cusparseStatus_t, (cusparseHandle_t handle, CUstream    \
    stream), (handle, stream), 1)                                                                  \
  X(cusparseCreateDnVec, cusparseCreateDnVec, cusparseStatus_t, (void **vec, int64_t size, void   \
    *values, int valueType), (vec, size, values, valueType), 1)                                    \
  X(cusparseDestroyDnVec, cusparseDestroyDnVec, cusparseStatus_t, (void *vec), (vec), 1)          \
  X(cusparseCreateDnMat, cusparseCreateDnMat, cusparseStatus_t, (void **mat, int64_t rows,        \
    int64_t cols, int64_t ld, void *values, int valueType, int order), (mat, rows, cols, ld,       \
    values, valueType, order), 1)                                                                  \
  X(cusparseDestroyDnMat, cusparseDestroyDnMat, cusparseStatus_t, (void *mat), (mat), 1)          \
  X(cusparseCreateCoo, cusparseCreateCoo, cusparseStatus_t, (void **mat, int64_t rows, int64_t    \
    cols, int64_t nnz, void *rowInd, void *colInd, void *values, int idxType, int idxBase, int     \
    valueType), (mat, rows, cols, nnz, rowInd, colInd, values, idxType, idxBase, valueType), 1)   \
  X(cusparseCreateCooAoS, cusparseCreateCooAoS, cusparseStatus_t, (void **mat, int64_t rows,      \
    int64_t cols, int64_t nnz, void *ind, void *values, int idxType, int idxBase, int valueType), \
    (mat, rows, cols, nnz, ind, values, idxType, idxBase, valueType), 0)                           \
  X(cusparseCreateCsr, cusparseCreateCsr, cusparseStatus_t, (void **mat, int64_t rows, int64_t    \
    cols, int64_t nnz, void *rowOffsets, void *colInd, void *values, int offType, int idxType,    \
    int idxBase, int valueType), (mat, rows, cols, nnz, rowOffsets, colInd, values, offType,      \
    idxType, idxBase, valueType), 1)                                                               \
  X(cusparseCreateCsc, cusparseCreateCsc, cusparseStatus_t, (void **mat, int64_t rows, int64_t    \
    cols, int64_t nnz, void *colOffsets, void *rowInd, void *values, int offType, int idxType,    \
    int idxBase, int valueType), (mat, rows, cols, nnz, colOffsets, rowInd, values, offType,      \
    idxType, idxBase, valueType), 0)                                                               \
  X(cusparseCreateBsr, cusparseCreateBsr, cusparseStatus_t, (void **mat, int64_t brows, int64_t   \
    bcols, int64_t bnnz, int64_t rowBlockSize, int64_t colBlockSize, void *rowOffsets, void       \
    *colInd, void *values, int offType, int idxType, int idxBase, int valueType, int order),      \
    (mat, brows, bcols, bnnz, rowBlockSize, colBlockSize, rowOffsets, colInd, values, offType,    \
    idxType, idxBase, valueType, order), 0)                                                        \
  X(cusparseDestroySpMat, cusparseDestroySpMat, cusparseStatus_t, (void *mat), (mat), 1)         \
  X(cusparseSpMV_bufferSize, cusparseSpMV_bufferSize, cusparseStatus_t, (cusparseHandle_t handle, \
    int opA, const void *alpha, void *matA, void *vecX, const void *beta, void *vecY, int         \
    computeType, int alg, size_t *bufferSize), (handle, opA, alpha, matA, vecX, beta, vecY,       \
    computeType, alg, bufferSize), 1)                                                              \
  X(cusparseSpMV, cusparseSpMV, cusparseStatus_t, (cusparseHandle_t handle, int opA, const void   \
    *alpha, void *matA, void *vecX, const void *beta, void *vecY, int computeType, int alg, void   \
    *buffer), (handle, opA, alpha, matA, vecX, beta, vecY, computeType, alg, buffer), 1)          \
  X(cusparseSpMM_bufferSize, cusparseSpMM_bufferSize, cusparseStatus_t, (cusparseHandle_t handle, \
    int opA, int opB, const void *alpha, void *matA, void *matB, const void *beta, void *matC,    \
    int computeType, int alg, size_t *bufferSize), (handle, opA, opB, alpha, matA, matB, beta,    \
    matC, computeType, alg, bufferSize), 1)                                                        \
  X(cusparseSpMM, cusparseSpMM, cusparseStatus_t, (cusparseHandle_t handle, int opA, int opB,     \
    const void *alpha, void *matA, void *matB, const void *beta, void *matC, int computeType, int \
    alg, void *buffer), (handle, opA, opB, alpha, matA, matB, beta, matC, computeType, alg,       \
    buffer), 1)                                                                                    \
  X(cusparseSDDMM_bufferSize, cusparseSDDMM_bufferSize, cusparseStatus_t, (cusparseHandle_t       \
    handle, int opA, int opB, const void *alpha, void *matA, void *matB, const void *beta, void   \
    *matC, int computeType, int alg, size_t *bufferSize), (handle, opA, opB, alpha, matA, matB,   \
    beta, matC, computeType, alg, bufferSize), 1)                                                  \
  X(cusparseSDDMM, cusparseSDDMM, cusparseStatus_t, (cusparseHandle_t handle, int opA, int opB,   \
    const void *alpha, void *matA, void *matB, const void *beta, void *matC, int computeType, int \
    alg, void *buffer), (handle, opA, opB, alpha, matA, matB, beta, matC, computeType, alg,       \
    buffer), 1)                                                                                    \
  X(cusparseSpGEMM_createDescr, cusparseSpGEMM_createDescr, cusparseStatus_t, (void **descr),     \
    (descr), 1)                                                                                    \
  X(cusparseSpGEMM_destroyDescr, cusparseSpGEMM_destroyDescr, cusparseStatus_t, (void *descr),    \
    (descr), 1)                                                                                    \
  X(cusparseSpGEMM_workEstimation, cusparseSpGEMM_workEstimation, cusparseStatus_t,               \
    (cusparseHandle_t handle, int opA, int opB, const void *alpha, void *matA, void *matB, const  \
    void *beta, void *matC, int computeType, int alg, void *descr, size_t *bufferSize1, void      \
    *externalBuffer1), (handle, opA, opB, alpha, matA, matB, beta, matC, computeType, alg, descr, \
    bufferSize1, externalBuffer1), 1)                                                              \
  X(cusparseSpGEMM_compute, cusparseSpGEMM_compute, cusparseStatus_t, (cusparseHandle_t handle,   \
    int opA, int opB, const void *alpha, void *matA, void *matB, const void *beta, void *matC,    \
    int computeType, int alg, void *descr, size_t *bufferSize2, void *externalBuffer2), (handle,  \
    opA, opB, alpha, matA, matB, beta, matC, computeType, alg, descr, bufferSize2,                \
    externalBuffer2), 1)                                                                           \
  X(cusparseSpGEMM_copy, cusparseSpGEMM_copy, cusparseStatus_t, (cusparseHandle_t handle, int opA,\
    int opB, const void *alpha, void *matA, void *matB, const void *beta, void *matC, int         \
    computeType, int alg, void *descr), (handle, opA, opB, alpha, matA, matB, beta, matC,         \
    computeType, alg, descr), 1)                                                                   \
  X(cusparseSpMatGetSize, cusparseSpMatGetSize, cusparseStatus_t, (void *mat, int64_t *rows,      \
    int64_t *cols, int64_t *nnz), (mat, rows, cols, nnz), 1)                                       \
  X(cusparseCsrSetPointers, cusparseCsrSetPointers, cusparseStatus_t, (void *mat, void            \
    *rowOffsets, void *colInd, void *values), (mat, rowOffsets, colInd, values), 1)              \
  X(cusparseCsrGet, cusparseCsrGet, cusparseStatus_t, (void *mat, int64_t *rows, int64_t *cols,   \
    int64_t *nnz, void **rowOffsets, void **colInd, void **values, int *offType, int *idxType,    \
    int *idxBase, int *valueType), (mat, rows, cols, nnz, rowOffsets, colInd, values, offType,    \
    idxType, idxBase, valueType), 0)

/* cuSPARSELt: `handle`, `mat`, `matmul`, `alg`, `plan` point to caller-owned opaque structs. */
#define MC_CUSPARSELT_SYMBOLS(X)                                                                   \
  X(cusparseLtGetProperty, cusparseLtGetProperty, cusparseStatus_t, (int type, int *value),       \
    (type, value), 1)                                                                              \
  X(cusparseLtInit, cusparseLtInit, cusparseStatus_t, (void *handle), (handle), 1)                \
  X(cusparseLtDestroy, cusparseLtDestroy, cusparseStatus_t, (const void *handle), (handle), 1)    \
  X(cusparseLtDenseDescriptorInit, cusparseLtDenseDescriptorInit, cusparseStatus_t, (const void   \
    *handle, void *mat, int64_t rows, int64_t cols, int64_t ld, uint32_t alignment, int           \
    valueType, int order), (handle, mat, rows, cols, ld, alignment, valueType, order), 1)         \
  X(cusparseLtStructuredDescriptorInit, cusparseLtStructuredDescriptorInit, cusparseStatus_t,     \
    (const void *handle, void *mat, int64_t rows, int64_t cols, int64_t ld, uint32_t alignment,   \
    int valueType, int order, int sparsity), (handle, mat, rows, cols, ld, alignment, valueType,  \
    order, sparsity), 1)                                                                           \
  X(cusparseLtMatDescriptorDestroy, cusparseLtMatDescriptorDestroy, cusparseStatus_t, (const void \
    *mat), (mat), 1)                                                                               \
  X(cusparseLtMatmulDescriptorInit, cusparseLtMatmulDescriptorInit, cusparseStatus_t, (const void \
    *handle, void *matmul, int opA, int opB, const void *matA, const void *matB, const void *matC,\
    const void *matD, int computeType), (handle, matmul, opA, opB, matA, matB, matC, matD,        \
    computeType), 1)                                                                               \
  X(cusparseLtMatmulAlgSelectionInit, cusparseLtMatmulAlgSelectionInit, cusparseStatus_t, (const  \
    void *handle, void *alg, const void *matmul, int algKind), (handle, alg, matmul, algKind), 1) \
  X(cusparseLtMatmulAlgSetAttribute, cusparseLtMatmulAlgSetAttribute, cusparseStatus_t, (const    \
    void *handle, void *alg, int attribute, const void *data, size_t dataSize), (handle, alg,     \
    attribute, data, dataSize), 1)                                                                 \
  X(cusparseLtMatmulPlanInit, cusparseLtMatmulPlanInit, cusparseStatus_t, (const void *handle,    \
    void *plan, const void *matmul, const void *alg), (handle, plan, matmul, alg), 1)             \
  X(cusparseLtMatmulPlanDestroy, cusparseLtMatmulPlanDestroy, cusparseStatus_t, (const void       \
    *plan), (plan), 1)                                                                             \
  X(cusparseLtMatmulGetWorkspace, cusparseLtMatmulGetWorkspace, cusparseStatus_t, (const void     \
    *handle, const void *plan, size_t *workspaceSize), (handle, plan, workspaceSize), 1)          \
  X(cusparseLtSpMMAPrune, cusparseLtSpMMAPrune, cusparseStatus_t, (const void *handle, const void \
    *matmul, const void *in, void *out, int pruneAlg, CUstream stream), (handle, matmul, in, out,  \
    pruneAlg, stream), 1)                                                                          \
  X(cusparseLtSpMMAPruneCheck, cusparseLtSpMMAPruneCheck, cusparseStatus_t, (const void *handle,  \
    const void *matmul, const void *in, int *valid, CUstream stream), (handle, matmul, in, valid,  \
    stream), 1)                                                                                    \
  X(cusparseLtSpMMACompressedSize, cusparseLtSpMMACompressedSize, cusparseStatus_t, (const void   \
    *handle, const void *plan, size_t *compressedSize, size_t *compressedBufferSize), (handle,    \
    plan, compressedSize, compressedBufferSize), 1)                                                \
  X(cusparseLtSpMMACompress, cusparseLtSpMMACompress, cusparseStatus_t, (const void *handle,      \
    const void *plan, const void *dense, void *compressed, void *compressedBuffer, CUstream       \
    stream), (handle, plan, dense, compressed, compressedBuffer, stream), 1)                      \
  X(cusparseLtMatmul, cusparseLtMatmul, cusparseStatus_t, (const void *handle, const void *plan,  \
    const void *alpha, const void *dA, const void *dB, const void *beta, const void *dC, void     \
    *dD, void *workspace, CUstream *streams, int32_t numStreams), (handle, plan, alpha, dA, dB,   \
    beta, dC, dD, workspace, streams, numStreams), 1)

#endif /* MGPU_CACHED_SPARSE_API_H */
