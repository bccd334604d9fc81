/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* sparse.c - cuSPARSE operations for the sparse mgpu* entry points (see sparse.h; cuSPARSELt is
 * in sparselt.c).
 *
 * Locking: g_sp_lock guards the cuSPARSE handle table (g_sparse_slots, g_nslots) and the stock-mode
 * handle; it is never held across a library or driver call. A slot marked busy belongs to the
 * one thread using it until it is released.
 */
#include "sparse/sparse.h"

#include <pthread.h>
#include <string.h>

#include "support/config.h"
#include "platform/context.h"
#include "platform/driver.h"
#include "streams/pool.h"
#include "support/report.h"
#include "support/stats.h"
#include "sparse/sparse_lib.h"
#include "stock/stock.h"

#define MAX_SLOTS 64 /* cuSPARSE handles kept; beyond, a call's extra handle is destroyed after */

typedef struct sp_slot {
  cusparseHandle_t h; /* owned by the table */
  int device;         /* device whose context it was made in */
  CUstream stream;    /* driver stream it is set to */
  int busy;           /* 1 while a call uses it (under g_sp_lock) */
} sp_slot;

static pthread_mutex_t g_sp_lock = PTHREAD_MUTEX_INITIALIZER;
static sp_slot g_sparse_slots[MAX_SLOTS]; /* under g_sp_lock */
static int g_nslots;               /* under g_sp_lock */
static cusparseHandle_t g_stock_env; /* stock mode: the process-wide handle (as upstream) */

/* ---- one library call's setup: handle, driver stream, context ---- */

typedef struct sp_call {
  cusparseHandle_t h;
  CUstream stream;  /* driver stream the work goes to */
  int slot;         /* index in g_sparse_slots, or -1 (stock, or an extra handle to destroy after) */
  mc_ctx_scope scope;
  mc_stream_use use;
} sp_call;

static mc_status begin_call(CUstream stream, const char *call, sp_call *c) {
  memset(c, 0, sizeof *c);
  c->slot = -1;
  mc_status st = mc_cusparse_load();
  if (MC_FAILED(st)) return st;
  if (mc_disabled()) { /* upstream: the global handle, no stream, no context */
    c->h = __atomic_load_n(&g_stock_env, __ATOMIC_ACQUIRE);
    return MC_OK;
  }
  MC_STAT_INC(device_ops); /* work on the stream: a host_shared block it may touch is not freed
                            as untouched (allocator.c) */
  st = mc_stream_use_begin(stream, call, &c->use);
  if (MC_FAILED(st)) return st;
  st = mc_ctx_enter(c->use.device, &c->scope);
  if (MC_FAILED(st)) {
    mc_stream_use_end(&c->use);
    return st;
  }
  c->stream = c->use.stream;
  int dev = c->use.device, rebind = -1;
  pthread_mutex_lock(&g_sp_lock);
  for (int i = 0; i < g_nslots && c->slot < 0; ++i)
    if (!g_sparse_slots[i].busy && g_sparse_slots[i].device == dev && g_sparse_slots[i].stream == c->stream) c->slot = i;
  if (c->slot < 0 && g_nslots >= MAX_SLOTS) /* table full: re-aim an idle handle of the device */
    for (int i = 0; i < g_nslots && rebind < 0; ++i)
      if (!g_sparse_slots[i].busy && g_sparse_slots[i].device == dev) rebind = i;
  if (c->slot < 0 && rebind >= 0) c->slot = rebind;
  if (c->slot >= 0) {
    g_sparse_slots[c->slot].busy = 1;
    c->h = g_sparse_slots[c->slot].h;
  }
  pthread_mutex_unlock(&g_sp_lock);
  cusparseStatus_t s = 0;
  if (c->slot < 0) { /* a new handle, made in the device's context */
    const char *failed = "cusparseCreate(&handle)";
    s = mc_sp.cusparseCreate(&c->h);
    if (s == 0) {
      failed = "cusparseSetStream(handle, stream)";
      s = mc_sp.cusparseSetStream(c->h, c->stream);
      if (s != 0) mc_sp.cusparseDestroy(c->h);
    }
    if (s != 0) {
      mc_ctx_leave(&c->scope);
      mc_stream_use_end(&c->use);
      return MC_SP_FAIL(failed, s);
    }
    pthread_mutex_lock(&g_sp_lock);
    if (g_nslots < MAX_SLOTS) {
      c->slot = g_nslots++;
      g_sparse_slots[c->slot] = (sp_slot){c->h, dev, c->stream, 1};
    }
    pthread_mutex_unlock(&g_sp_lock);
    mc_debug("cuSPARSE handle made for device %d, stream %p", dev, (void *)c->stream);
  } else if (rebind >= 0) {
    s = mc_sp.cusparseSetStream(c->h, c->stream);
    pthread_mutex_lock(&g_sp_lock);
    g_sparse_slots[c->slot].stream = s == 0 ? c->stream : (CUstream)(intptr_t)-1; /* -1: matches none */
    if (s != 0) g_sparse_slots[c->slot].busy = 0;
    pthread_mutex_unlock(&g_sp_lock);
    if (s != 0) {
      mc_ctx_leave(&c->scope);
      mc_stream_use_end(&c->use);
      return MC_SP_FAIL("cusparseSetStream(handle, stream)", s);
    }
  }
  return MC_OK;
}

static void end_call(sp_call *c) {
  if (mc_disabled()) return;
  if (c->slot >= 0) {
    pthread_mutex_lock(&g_sp_lock);
    g_sparse_slots[c->slot].busy = 0;
    pthread_mutex_unlock(&g_sp_lock);
  } else if (c->h) {
    mc_sp.cusparseDestroy(c->h);
  }
  mc_ctx_leave(&c->scope); /* cached mode: begin_call entered it */
  mc_stream_use_end(&c->use);
}

/* alpha = beta = 1 in the compute type (upstream's ALPHABETA): bf16, f16, f32, else f64; complex
 * types get (1, 0) (upstream passes a real scalar and the library reads past it). */
typedef struct sp_one {
  _Alignas(16) unsigned char alpha[16];
  _Alignas(16) unsigned char beta[16];
} sp_one;

static void one_of(int ctp, sp_one *o) {
  memset(o, 0, sizeof *o);
  if (ctp == MC_CUDA_R_16BF || ctp == MC_CUDA_C_16BF) {
    uint16_t v = 0x3F80;
    memcpy(o->alpha, &v, 2);
  } else if (ctp == MC_CUDA_R_16F || ctp == MC_CUDA_C_16F) {
    uint16_t v = 0x3C00;
    memcpy(o->alpha, &v, 2);
  } else if (ctp == MC_CUDA_R_32F || ctp == MC_CUDA_C_32F) {
    float v = 1.0f;
    memcpy(o->alpha, &v, 4);
  } else {
    double v = 1.0;
    memcpy(o->alpha, &v, 8);
  }
  memcpy(o->beta, o->alpha, sizeof o->alpha);
}

/* ---- environment ---- */

mc_status mc_sparse_env_create(void) {
  mc_status st = mc_cusparse_load();
  if (MC_FAILED(st)) return st;
  if (mc_disabled()) {
    mc_stock_scope_push();
    cusparseHandle_t h = NULL;
    cusparseStatus_t s = mc_sp.cusparseCreate(&h);
    mc_stock_scope_pop();
    if (s) return MC_SP_FAIL("cusparseCreate(&cusparse_env)", s);
    __atomic_store_n(&g_stock_env, h, __ATOMIC_RELEASE);
    return MC_OK;
  }
  sp_call c; /* warm a handle for the NULL stream of the thread's device */
  st = begin_call(NULL, "mgpuCreateSparseEnv", &c);
  if (MC_FAILED(st)) return st;
  end_call(&c);
  return MC_OK;
}

mc_status mc_sparse_env_destroy(void) {
  mc_status st = mc_cusparse_load();
  if (MC_FAILED(st)) return st;
  if (!mc_disabled()) return MC_OK; /* the handles stay for the next environment */
  cusparseHandle_t h = __atomic_exchange_n(&g_stock_env, NULL, __ATOMIC_ACQ_REL);
  SP_TRY("cusparseDestroy(cusparse_env)", mc_sp.cusparseDestroy(h));
  return MC_OK;
}

/* ---- descriptors (host only: no handle, no context, as upstream) ---- */

mc_status mc_sparse_create_dnvec(intptr_t size, void *values, int32_t dtp, void **out) {
  *out = NULL;
  mc_status st = mc_cusparse_load();
  if (MC_FAILED(st)) return st;
  SP_TRY("cusparseCreateDnVec(&vec, size, values, dTp)",
         mc_sp.cusparseCreateDnVec(out, size, values, dtp));
  return MC_OK;
}

mc_status mc_sparse_destroy_dnvec(void *v) {
  mc_status st = mc_cusparse_load();
  if (MC_FAILED(st)) return st;
  SP_TRY("cusparseDestroyDnVec(vec)", mc_sp.cusparseDestroyDnVec(v));
  return MC_OK;
}

mc_status mc_sparse_create_dnmat(intptr_t rows, intptr_t cols, void *values, int32_t dtp,
                                 void **out) {
  *out = NULL;
  mc_status st = mc_cusparse_load();
  if (MC_FAILED(st)) return st;
  SP_TRY("cusparseCreateDnMat(&mat, rows, cols, /*ld=*/cols, values, dTp, CUSPARSE_ORDER_ROW)",
         mc_sp.cusparseCreateDnMat(out, rows, cols, cols, values, dtp, MC_CUSPARSE_ORDER_ROW));
  return MC_OK;
}

mc_status mc_sparse_destroy_dnmat(void *m) {
  mc_status st = mc_cusparse_load();
  if (MC_FAILED(st)) return st;
  SP_TRY("cusparseDestroyDnMat(mat)", mc_sp.cusparseDestroyDnMat(m));
  return MC_OK;
}

mc_status mc_sparse_create_coo(intptr_t rows, intptr_t cols, intptr_t nnz, void *row_idxs,
                               void *col_idxs, void *values, int32_t itp, int32_t dtp,
                               void **out) {
  *out = NULL;
  mc_status st = mc_cusparse_load();
  if (MC_FAILED(st)) return st;
  SP_TRY("cusparseCreateCoo(&mat, rows, cols, nnz, rowIdxs, colIdxs, values, iTp, "
         "CUSPARSE_INDEX_BASE_ZERO, dTp)",
         mc_sp.cusparseCreateCoo(out, rows, cols, nnz, row_idxs, col_idxs, values, itp,
                                 MC_CUSPARSE_INDEX_BASE_ZERO, dtp));
  return MC_OK;
}

mc_status mc_sparse_create_coo_aos(intptr_t rows, intptr_t cols, intptr_t nnz, void *idxs,
                                   void *values, int32_t itp, int32_t dtp, void **out) {
  *out = NULL;
  mc_status st = mc_cusparse_load();
  if (MC_FAILED(st)) return st;
  if (!mc_sp.cusparseCreateCooAoS) /* removed in cuSPARSE 12 */
    return MC_SP_FAIL("cusparseCreateCooAoS", MC_CUSPARSE_STATUS_NOT_SUPPORTED);
  SP_TRY("cusparseCreateCooAoS(&mat, rows, cols, nnz, idxs, values, iTp, "
         "CUSPARSE_INDEX_BASE_ZERO, dTp)",
         mc_sp.cusparseCreateCooAoS(out, rows, cols, nnz, idxs, values, itp,
                                    MC_CUSPARSE_INDEX_BASE_ZERO, dtp));
  return MC_OK;
}

mc_status mc_sparse_create_csr(intptr_t rows, intptr_t cols, intptr_t nnz, void *pos, void *idxs,
                               void *values, int32_t ptp, int32_t itp, int32_t dtp, void **out) {
  *out = NULL;
  mc_status st = mc_cusparse_load();
  if (MC_FAILED(st)) return st;
  SP_TRY("cusparseCreateCsr(&mat, rows, cols, nnz, rowPos, colIdxs, values, pTp, iTp, "
         "CUSPARSE_INDEX_BASE_ZERO, dTp)",
         mc_sp.cusparseCreateCsr(out, rows, cols, nnz, pos, idxs, values, ptp, itp,
                                 MC_CUSPARSE_INDEX_BASE_ZERO, dtp));
  return MC_OK;
}

mc_status mc_sparse_create_csc(intptr_t rows, intptr_t cols, intptr_t nnz, void *pos, void *idxs,
                               void *values, int32_t ptp, int32_t itp, int32_t dtp, void **out) {
  *out = NULL;
  mc_status st = mc_cusparse_load();
  if (MC_FAILED(st)) return st;
  if (!mc_sp.cusparseCreateCsc)
    return MC_SP_FAIL("cusparseCreateCsc", MC_CUSPARSE_STATUS_NOT_SUPPORTED);
  SP_TRY("cusparseCreateCsc(&mat, rows, cols, nnz, colPos, rowIdxs, values, pTp, iTp, "
         "CUSPARSE_INDEX_BASE_ZERO, dTp)",
         mc_sp.cusparseCreateCsc(out, rows, cols, nnz, pos, idxs, values, ptp, itp,
                                 MC_CUSPARSE_INDEX_BASE_ZERO, dtp));
  return MC_OK;
}

mc_status mc_sparse_create_bsr(intptr_t brows, intptr_t bcols, intptr_t bnnz, intptr_t rbsz,
                               intptr_t cbsz, void *pos, void *idxs, void *values, int32_t ptp,
                               int32_t itp, int32_t dtp, void **out) {
  *out = NULL;
  mc_status st = mc_cusparse_load();
  if (MC_FAILED(st)) return st;
  if (!mc_sp.cusparseCreateBsr) return MC_OK; /* before cuSPARSE 12.1: null, as upstream */
  SP_TRY("cusparseCreateBsr(&mat, brows, bcols, bnnz, rBsz, cBsz, rowPos, colIdxs, values, pTp, "
         "iTp, CUSPARSE_INDEX_BASE_ZERO, dTp, CUSPARSE_ORDER_ROW)",
         mc_sp.cusparseCreateBsr(out, brows, bcols, bnnz, rbsz, cbsz, pos, idxs, values, ptp, itp,
                                 MC_CUSPARSE_INDEX_BASE_ZERO, dtp, MC_CUSPARSE_ORDER_ROW));
  return MC_OK;
}

mc_status mc_sparse_destroy_spmat(void *m) {
  mc_status st = mc_cusparse_load();
  if (MC_FAILED(st)) return st;
  SP_TRY("cusparseDestroySpMat(mat)", mc_sp.cusparseDestroySpMat(m));
  return MC_OK;
}

mc_status mc_sparse_spmat_get_size(void *m, void *rows, void *cols, void *nnz) {
  mc_status st = mc_cusparse_load();
  if (MC_FAILED(st)) return st;
  SP_TRY("cusparseSpMatGetSize(matDescr, rows, cols, nnz)",
         mc_sp.cusparseSpMatGetSize(m, (int64_t *)rows, (int64_t *)cols, (int64_t *)nnz));
  return MC_OK;
}

mc_status mc_sparse_set_csr_pointers(void *m, void *pos, void *idxs, void *values) {
  mc_status st = mc_cusparse_load();
  if (MC_FAILED(st)) return st;
  SP_TRY("cusparseCsrSetPointers(matDescr, p, c, v)",
         mc_sp.cusparseCsrSetPointers(m, pos, idxs, values));
  return MC_OK;
}

mc_status mc_sparse_spgemm_create_descr(void **out) {
  *out = NULL;
  mc_status st = mc_cusparse_load();
  if (MC_FAILED(st)) return st;
  SP_TRY("cusparseSpGEMM_createDescr(&spgemmDesc)", mc_sp.cusparseSpGEMM_createDescr(out));
  return MC_OK;
}

mc_status mc_sparse_spgemm_destroy_descr(void *d) {
  mc_status st = mc_cusparse_load();
  if (MC_FAILED(st)) return st;
  SP_TRY("cusparseSpGEMM_destroyDescr(spgemmDesc)", mc_sp.cusparseSpGEMM_destroyDescr(d));
  return MC_OK;
}

/* ---- operations (a handle on the stream's driver stream) ---- */

/* Run `expr` (a cuSPARSE call using c.h and one) between begin_call and end_call. */
#define SP_OP(stream, ctp, callname, expr)                                                       \
  do {                                                                                           \
    sp_call c;                                                                                   \
    mc_status st_ = begin_call((stream), callname, &c);                                          \
    if (MC_FAILED(st_)) return st_;                                                              \
    sp_one one;                                                                                  \
    one_of((ctp), &one);                                                                         \
    cusparseStatus_t s_ = (expr);                                                                \
    end_call(&c);                                                                                \
    if (s_) return MC_SP_FAIL(callname, s_);                                                     \
  } while (0)

mc_status mc_sparse_spmv_buffer_size(int32_t ma, void *a, void *x, void *y, int32_t ctp,
                                     CUstream stream, intptr_t *out) {
  size_t size = 0;
  *out = 0;
  SP_OP(stream, ctp, "cusparseSpMV_bufferSize",
        mc_sp.cusparseSpMV_bufferSize(c.h, ma, one.alpha, a, x, one.beta, y, ctp,
                                      MC_CUSPARSE_SPMV_ALG_DEFAULT, &size));
  *out = (intptr_t)size;
  return MC_OK;
}

mc_status mc_sparse_spmv(int32_t ma, void *a, void *x, void *y, int32_t ctp, void *buf,
                         CUstream stream) {
  SP_OP(stream, ctp, "cusparseSpMV",
        mc_sp.cusparseSpMV(c.h, ma, one.alpha, a, x, one.beta, y, ctp,
                           MC_CUSPARSE_SPMV_ALG_DEFAULT, buf));
  return MC_OK;
}

mc_status mc_sparse_spmm_buffer_size(int32_t ma, int32_t mb, void *a, void *b, void *cm,
                                     int32_t ctp, CUstream stream, intptr_t *out) {
  size_t size = 0;
  *out = 0;
  SP_OP(stream, ctp, "cusparseSpMM_bufferSize",
        mc_sp.cusparseSpMM_bufferSize(c.h, ma, mb, one.alpha, a, b, one.beta, cm, ctp,
                                      MC_CUSPARSE_SPMM_ALG_DEFAULT, &size));
  *out = (intptr_t)size;
  return MC_OK;
}

mc_status mc_sparse_spmm(int32_t ma, int32_t mb, void *a, void *b, void *cm, int32_t ctp,
                         void *buf, CUstream stream) {
  SP_OP(stream, ctp, "cusparseSpMM",
        mc_sp.cusparseSpMM(c.h, ma, mb, one.alpha, a, b, one.beta, cm, ctp,
                           MC_CUSPARSE_SPMM_ALG_DEFAULT, buf));
  return MC_OK;
}

mc_status mc_sparse_sddmm_buffer_size(int32_t ma, int32_t mb, void *a, void *b, void *cm,
                                      int32_t ctp, CUstream stream, intptr_t *out) {
  size_t size = 0;
  *out = 0;
  SP_OP(stream, ctp, "cusparseSDDMM_bufferSize",
        mc_sp.cusparseSDDMM_bufferSize(c.h, ma, mb, one.alpha, a, b, one.beta, cm, ctp,
                                       MC_CUSPARSE_SDDMM_ALG_DEFAULT, &size));
  *out = (intptr_t)size;
  return MC_OK;
}

mc_status mc_sparse_sddmm(int32_t ma, int32_t mb, void *a, void *b, void *cm, int32_t ctp,
                          void *buf, CUstream stream) {
  SP_OP(stream, ctp, "cusparseSDDMM",
        mc_sp.cusparseSDDMM(c.h, ma, mb, one.alpha, a, b, one.beta, cm, ctp,
                            MC_CUSPARSE_SDDMM_ALG_DEFAULT, buf));
  return MC_OK;
}

/* Cached mode: an empty CSR output of SpGEMM (nnz 0, as the sparsifier makes it) gets zeroed row
 * offsets, on the call's stream, before cuSPARSE sees it. The generated code allocates them with
 * gpu.alloc and never writes them; cuSPARSE reads them (upstream passes beta = 1): with memory
 * fresh from the driver they held zeros or the same leftovers every time, with the caching
 * allocator they hold the previous call's result and SpGEMM went wrong (H100, run 2 in
 * benchmarks/results/h100-sparse). Zero offsets are exactly the empty matrix the descriptor says
 * C is. Anything else (nnz > 0, not CSR, no cusparseCsrGet) is left alone. */
static mc_status zero_empty_csr_offsets(void *cm, CUstream stream) {
  int64_t rows = 0, cols = 0, nnz = -1;
  void *offsets = NULL, *ind = NULL, *val = NULL;
  int off_type = 0, idx_type = 0, base = 0, vtype = 0;
  if (mc_disabled() || !cm || !mc_sp.cusparseCsrGet ||
      mc_sp.cusparseCsrGet(cm, &rows, &cols, &nnz, &offsets, &ind, &val, &off_type, &idx_type,
                           &base, &vtype) != 0 ||
      nnz != 0 || !offsets || rows < 0)
    return MC_OK;
  size_t width = off_type == 1 ? 2 : off_type == 2 ? 4 : off_type == 3 ? 8 : 0;
  if (!width) return MC_OK;
  size_t bytes = (size_t)(rows + 1) * width;
  CUresult r = width == 2 ? mc_cu.cuMemsetD16Async((CUdeviceptr)(uintptr_t)offsets, 0, bytes / 2,
                                                   stream)
                          : mc_cu.cuMemsetD32Async((CUdeviceptr)(uintptr_t)offsets, 0, bytes / 4,
                                                   stream);
  return r ? MC_FAIL("cuMemsetD32Async(csrRowOffsets of the empty SpGEMM result)", r) : MC_OK;
}

mc_status mc_sparse_spgemm_work_estimation(void *d, int32_t ma, int32_t mb, void *a, void *b,
                                           void *cm, int32_t ctp, intptr_t bs, void *buf,
                                           CUstream stream, intptr_t *out) {
  size_t size = (size_t)bs;
  *out = 0;
  SP_OP(stream, ctp, "cusparseSpGEMM_workEstimation",
        MC_FAILED(zero_empty_csr_offsets(cm, c.stream))
            ? MC_CUSPARSE_STATUS_EXECUTION_FAILED
            : mc_sp.cusparseSpGEMM_workEstimation(c.h, ma, mb, one.alpha, a, b, one.beta, cm, ctp,
                                                  MC_CUSPARSE_SPGEMM_DEFAULT, d, &size, buf));
  *out = (intptr_t)size;
  return MC_OK;
}

mc_status mc_sparse_spgemm_compute(void *d, int32_t ma, int32_t mb, void *a, void *b, void *cm,
                                   int32_t ctp, intptr_t bs, void *buf, CUstream stream,
                                   intptr_t *out) {
  size_t size = (size_t)bs;
  *out = 0;
  SP_OP(stream, ctp, "cusparseSpGEMM_compute",
        mc_sp.cusparseSpGEMM_compute(c.h, ma, mb, one.alpha, a, b, one.beta, cm, ctp,
                                     MC_CUSPARSE_SPGEMM_DEFAULT, d, &size, buf));
  *out = (intptr_t)size;
  return MC_OK;
}

mc_status mc_sparse_spgemm_copy(void *d, int32_t ma, int32_t mb, void *a, void *b, void *cm,
                                int32_t ctp, CUstream stream) {
  SP_OP(stream, ctp, "cusparseSpGEMM_copy",
        mc_sp.cusparseSpGEMM_copy(c.h, ma, mb, one.alpha, a, b, one.beta, cm, ctp,
                                  MC_CUSPARSE_SPGEMM_DEFAULT, d));
  return MC_OK;
}

/* ---- fork ---- */

void mc_sparse_fork_prepare(void) { pthread_mutex_lock(&g_sp_lock); }
void mc_sparse_fork_parent(void) { pthread_mutex_unlock(&g_sp_lock); }
void mc_sparse_fork_child(void) {
  /* The parent's handles belong to its contexts: forget them (no library call). */
  g_nslots = 0;
  memset(g_sparse_slots, 0, sizeof g_sparse_slots);
  g_stock_env = NULL;
  pthread_mutex_unlock(&g_sp_lock);
}
