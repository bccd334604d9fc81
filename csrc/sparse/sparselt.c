/* sparselt.c - cuSPARSELt (2:4 structured sparsity) operations for the sparse mgpu* entry points
 * (see sparselt.h).
 *
 * Locking: the per-device handles are published with a compare-and-swap (a thread that loses the
 * race destroys its own) and never freed; g_lt_lock guards the stock-mode handle and is never held
 * across a library call.
 */
#include "sparse/sparselt.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/config.h"
#include "platform/context.h"
#include "platform/driver.h"
#include "memory/memory.h"
#include "streams/pool.h"
#include "sparse/sparse_lib.h"
#include "stock/stock.h"

#define MAX_DEVICES 64

static pthread_mutex_t g_lt_lock = PTHREAD_MUTEX_INITIALIZER;
static void *g_lt_handles[MAX_DEVICES]; /* cached mode: one per device, published with CAS */
static void *g_lt_stock;                 /* stock mode: the process-wide handle, under g_lt_lock */

/* Layout in the caller's reserved space (S = the loaded library's struct size):
 *   sparse matrix: matrix descriptor @0, algorithm selection @S, plan @2S, matmul descriptor @3S,
 *                  values pointer @ MC_SPLT_SPMAT_RESERVED - 8;
 *   dense matrix:  matrix descriptor @0, values pointer @ MC_SPLT_DNMAT_RESERVED - 8.
 * With S = 11024 (cuSPARSELt <= 0.5) this is upstream's struct layout byte for byte. */
#define LT_MAT(p) ((unsigned char *)(p))
#define LT_ALG(p, S) ((unsigned char *)(p) + (S))
#define LT_PLAN(p, S) ((unsigned char *)(p) + 2 * (S))
#define LT_MATMUL(p, S) ((unsigned char *)(p) + 3 * (S))
#define LT_SP_VALUES(p) ((void **)((unsigned char *)(p) + MC_SPLT_SPMAT_RESERVED - 8))
#define LT_DN_VALUES(p) ((void **)((unsigned char *)(p) + MC_SPLT_DNMAT_RESERVED - 8))

/* Load cuSPARSELt and check that its structs fit the space the lowering reserves. */
static mc_status need_lt(const char *who) {
  mc_status st = mc_cusparselt_load();
  if (MC_FAILED(st)) return st;
  size_t S = mc_splt_struct_bytes();
  if (S % 16 || 4 * S > MC_SPLT_SPMAT_RESERVED - 8 || S > MC_SPLT_DNMAT_RESERVED - 8)
    return MC_FAIL(who, MC_E_TOO_SMALL);
  return MC_OK;
}

/* A handle's memory: S bytes, 16-byte aligned, zeroed. */
static void *lt_handle_alloc(void) {
  size_t S = mc_splt_struct_bytes();
  void *p = aligned_alloc(16, (S + 15) / 16 * 16);
  if (p) memset(p, 0, S);
  return p;
}

/* The cuSPARSELt handle for `device` (cached mode; made in its context on first use). */
static mc_status lt_handle(int device, void **out) {
  if (device < 0 || device >= MAX_DEVICES) return MC_FAIL("cusparseLtInit", MC_E_BAD_DEVICE);
  void *h = __atomic_load_n(&g_lt_handles[device], __ATOMIC_ACQUIRE);
  if (h) {
    *out = h;
    return MC_OK;
  }
  void *mine = lt_handle_alloc();
  if (!mine) return MC_FAIL("cusparseLtInit", MC_E_NO_MEMORY);
  mc_ctx_scope scope;
  mc_status st = mc_ctx_enter(device, &scope);
  if (MC_FAILED(st)) {
    free(mine);
    return st;
  }
  cusparseStatus_t s = mc_splt.cusparseLtInit(mine);
  if (s) {
    mc_ctx_leave(&scope);
    free(mine);
    return MC_SP_FAIL("cusparseLtInit(&cusparseLt_env)", s);
  }
  void *expect = NULL;
  if (!__atomic_compare_exchange_n(&g_lt_handles[device], &expect, mine, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE)) {
    mc_splt.cusparseLtDestroy(mine); /* another thread won */
    free(mine);
    mine = expect;
  }
  mc_ctx_leave(&scope);
  *out = mine;
  return MC_OK;
}

/* One cuSPARSELt call's setup: handle, driver stream, context (cached), or the stock handle. */
typedef struct lt_call {
  void *h;
  CUstream stream; /* cached: the driver stream; stock: the caller's stream as given */
  mc_ctx_scope scope;
  mc_stream_use use;
} lt_call;

static mc_status lt_begin(const char *who, CUstream stream, lt_call *c) {
  memset(c, 0, sizeof *c);
  mc_status st = need_lt(who);
  if (MC_FAILED(st)) return st;
  if (mc_disabled()) {
    pthread_mutex_lock(&g_lt_lock);
    c->h = g_lt_stock;
    pthread_mutex_unlock(&g_lt_lock);
    c->stream = stream;
    if (!c->h) return MC_SP_FAIL("cusparseLt (mgpuCreateSparseLtEnv was not called)",
                                 MC_CUSPARSE_STATUS_NOT_INITIALIZED);
    /* Upstream makes these calls with no context of its own; cuSPARSELt 0.8 then fails
     * (cusparseLtMatmulAlgSelectionInit: internal error, seen on the H100) unless something
     * else made a context current on the thread. Stock mode pushes upstream's frozen context. */
    mc_stock_scope_push();
    return MC_OK;
  }
  st = mc_stream_use_begin(stream, who, &c->use);
  if (MC_FAILED(st)) return st;
  st = lt_handle(c->use.device, &c->h);
  if (!MC_FAILED(st)) st = mc_ctx_enter(c->use.device, &c->scope);
  if (MC_FAILED(st)) {
    mc_stream_use_end(&c->use);
    return st;
  }
  c->stream = c->use.stream;
  return MC_OK;
}

/* After a successful lt_begin: what it entered, left (the mode decides which). */
static void lt_end(lt_call *c) {
  if (mc_disabled()) {
    mc_stock_scope_pop();
    return;
  }
  mc_ctx_leave(&c->scope);
  mc_stream_use_end(&c->use);
}

#define LT_TRY(c, callname, expr)                                                                 \
  do {                                                                                           \
    cusparseStatus_t lt_s_ = (expr);                                                             \
    if (lt_s_) {                                                                                 \
      lt_end(c);                                                                                 \
      return MC_SP_FAIL(callname, lt_s_);                                                        \
    }                                                                                            \
  } while (0)

mc_status mc_sparselt_env_create(void) {
  mc_status st = need_lt("mgpuCreateSparseLtEnv");
  if (MC_FAILED(st)) return st;
  if (!mc_disabled()) {
    void *h = NULL;
    return lt_handle(mc_thread_device(), &h);
  }
  void *h = lt_handle_alloc();
  if (!h) return MC_FAIL("cusparseLtInit", MC_E_NO_MEMORY);
  mc_stock_scope_push();
  cusparseStatus_t s = mc_splt.cusparseLtInit(h);
  mc_stock_scope_pop();
  if (s) {
    free(h);
    return MC_SP_FAIL("cusparseLtInit(&cusparseLt_env)", s);
  }
  pthread_mutex_lock(&g_lt_lock);
  void *old = g_lt_stock;
  g_lt_stock = h;
  pthread_mutex_unlock(&g_lt_lock);
  free(old); /* created twice: upstream asserts; the old one is simply replaced */
  return MC_OK;
}

mc_status mc_sparselt_env_destroy(void) {
  mc_status st = need_lt("mgpuDestroySparseLtEnv");
  if (MC_FAILED(st)) return st;
  if (!mc_disabled()) return MC_OK; /* the per-device handles stay for the next environment */
  pthread_mutex_lock(&g_lt_lock);
  void *h = g_lt_stock;
  g_lt_stock = NULL;
  pthread_mutex_unlock(&g_lt_lock);
  if (!h) return MC_OK;
  cusparseStatus_t s = mc_splt.cusparseLtDestroy(h);
  free(h);
  if (s) return MC_SP_FAIL("cusparseLtDestroy(&cusparseLt_env)", s);
  return MC_OK;
}

mc_status mc_sparselt_create_dnmat(void *dh, intptr_t rows, intptr_t cols, void *values,
                                   int32_t dtp, CUstream stream) {
  if (!dh) return MC_FAIL("mgpuCreateCuSparseLtDnMat", MC_E_NULL_ARGUMENT);
  lt_call c;
  mc_status st = lt_begin("mgpuCreateCuSparseLtDnMat", stream, &c);
  if (MC_FAILED(st)) return st;
  memset(dh, 0, mc_splt_struct_bytes());
  *LT_DN_VALUES(dh) = values;
  LT_TRY(&c, "cusparseLtDenseDescriptorInit",
         mc_splt.cusparseLtDenseDescriptorInit(c.h, LT_MAT(dh), rows, cols, /*lda=*/cols,
                                               /*alignment=*/16, dtp, MC_CUSPARSE_ORDER_ROW));
  lt_end(&c);
  return MC_OK;
}

/* The matrix descriptor at the start of a dense or sparse matrix's reserved space. */
static mc_status destroy_mat(const char *who, const char *call, void *p) {
  mc_status st = need_lt(who);
  if (MC_FAILED(st)) return st;
  SP_TRY(call, mc_splt.cusparseLtMatDescriptorDestroy(LT_MAT(p)));
  return MC_OK;
}

mc_status mc_sparselt_destroy_dnmat(void *dh) {
  return destroy_mat("mgpuDestroyCuSparseLtDnMat",
                     "cusparseLtMatDescriptorDestroy(&(dnmat_handle->mat))", dh);
}

mc_status mc_sparselt_create_2to4_spmat(void *sh, intptr_t rows, intptr_t cols, void *values,
                                        int32_t dtp, CUstream stream) {
  if (!sh) return MC_FAIL("mgpuCusparseLtCreate2To4SpMat", MC_E_NULL_ARGUMENT);
  lt_call c;
  mc_status st = lt_begin("mgpuCusparseLtCreate2To4SpMat", stream, &c);
  if (MC_FAILED(st)) return st;
  memset(sh, 0, 4 * mc_splt_struct_bytes());
  *LT_SP_VALUES(sh) = values;
  LT_TRY(&c, "cusparseLtStructuredDescriptorInit",
         mc_splt.cusparseLtStructuredDescriptorInit(c.h, LT_MAT(sh), rows, cols, /*ld=*/cols,
                                                    /*alignment=*/16, dtp, MC_CUSPARSE_ORDER_ROW,
                                                    MC_CUSPARSELT_SPARSITY_50_PERCENT));
  lt_end(&c);
  return MC_OK;
}

mc_status mc_sparselt_destroy_spmat(void *sh) {
  return destroy_mat("mgpuDestroyCuSparseLtSpMat",
                     "cusparseLtMatDescriptorDestroy(&(spmat_handle->mat))", sh);
}

mc_status mc_sparselt_spmm_buffer_size(void *bs, int32_t ma, int32_t mb, void *a, void *b, void *cm,
                                       int32_t ctp, int32_t prune_flag, CUstream stream) {
  if (!bs || !a || !b || !cm)
    return MC_FAIL("mgpuCuSparseLtSpMMBufferSize", MC_E_NULL_ARGUMENT);
  lt_call c;
  mc_status st = lt_begin("mgpuCuSparseLtSpMMBufferSize", stream, &c);
  if (MC_FAILED(st)) return st;
  size_t S = mc_splt_struct_bytes();
  int64_t *sizes = (int64_t *)bs;
  LT_TRY(&c, "cusparseLtMatmulDescriptorInit",
         mc_splt.cusparseLtMatmulDescriptorInit(c.h, LT_MATMUL(a, S), ma, mb, LT_MAT(a), LT_MAT(b),
                                                LT_MAT(cm), LT_MAT(cm),
                                                mc_splt_compute_type(ctp)));
  LT_TRY(&c, "cusparseLtMatmulAlgSelectionInit",
         mc_splt.cusparseLtMatmulAlgSelectionInit(c.h, LT_ALG(a, S), LT_MATMUL(a, S),
                                                  MC_CUSPARSELT_MATMUL_ALG_DEFAULT));
  int alg = 0;
  LT_TRY(&c, "cusparseLtMatmulAlgSetAttribute",
         mc_splt.cusparseLtMatmulAlgSetAttribute(c.h, LT_ALG(a, S),
                                                 MC_CUSPARSELT_MATMUL_ALG_CONFIG_ID, &alg,
                                                 sizeof alg));
  LT_TRY(&c, "cusparseLtMatmulPlanInit",
         mc_splt.cusparseLtMatmulPlanInit(c.h, LT_PLAN(a, S), LT_MATMUL(a, S), LT_ALG(a, S)));
  void *values = *LT_SP_VALUES(a);
  if (prune_flag > 0) /* in place */
    LT_TRY(&c, "cusparseLtSpMMAPrune",
           mc_splt.cusparseLtSpMMAPrune(c.h, LT_MATMUL(a, S), values, values,
                                        MC_CUSPARSELT_PRUNE_SPMMA_STRIP, c.stream));
  int *dvalid = NULL;
  if (prune_flag == 2) { /* check the structure (synchronises the stream, as upstream) */
    st = mc_disabled() ? MC_OK : mc_mem_alloc(sizeof(int), stream, 0, (void **)&dvalid);
    if (mc_disabled()) dvalid = (int *)mc_stock_mem_alloc(sizeof(int), stream, 0);
    if (MC_FAILED(st) || !dvalid) {
      lt_end(&c);
      return MC_FAILED(st) ? st : MC_FAIL("mgpuCuSparseLtSpMMBufferSize", MC_E_NO_MEMORY);
    }
    /* cuSPARSELt only writes the flag when it finds a violation: the flag must start at 0.
     * Upstream relies on fresh driver memory; memory from the caching allocator holds leftovers
     * (seen on the H100: spurious "not 2:4" warnings). Cached mode zeroes it. */
    if (!mc_disabled()) {
      CUresult r = mc_cu.cuMemsetD32Async((CUdeviceptr)(uintptr_t)dvalid, 0, 1, c.stream);
      if (r) {
        lt_end(&c);
        return MC_FAIL("cuMemsetD32Async(valid)", r);
      }
    }
    LT_TRY(&c, "cusparseLtSpMMAPruneCheck",
           mc_splt.cusparseLtSpMMAPruneCheck(c.h, LT_MATMUL(a, S), values, dvalid, c.stream));
  }
  LT_TRY(&c, "cusparseLtMatmulGetWorkspace",
         mc_splt.cusparseLtMatmulGetWorkspace(c.h, LT_PLAN(a, S), (size_t *)&sizes[0]));
  LT_TRY(&c, "cusparseLtSpMMACompressedSize",
         mc_splt.cusparseLtSpMMACompressedSize(c.h, LT_PLAN(a, S), (size_t *)&sizes[1],
                                               (size_t *)&sizes[2]));
  lt_end(&c);
  if (dvalid) {
    int valid = 0;
    if (mc_disabled()) {
      mc_stock_memcpy(&valid, dvalid, sizeof valid, stream);
      mc_stock_stream_synchronize(stream);
      mc_stock_mem_free(dvalid, stream);
    } else {
      st = mc_memcpy(&valid, dvalid, sizeof valid, stream);
      if (!MC_FAILED(st)) st = mc_stream_synchronize(stream);
      mc_status fst = mc_mem_free(dvalid, stream);
      if (MC_FAILED(st)) return st;
      if (MC_FAILED(fst)) return fst;
    }
    if (valid != 0)
      fprintf(stderr, "CUPARSE-LT: sparse matrix is not 2:4; computed results will be invalid\n");
  }
  return MC_OK;
}

mc_status mc_sparselt_spmm(void *a, void *b, void *cm, void *workspace, void *compressed,
                           void *compressed_buffer, CUstream stream) {
  if (!a || !b || !cm) return MC_FAIL("mgpuCuSparseLtSpMM", MC_E_NULL_ARGUMENT);
  lt_call c;
  mc_status st = lt_begin("mgpuCuSparseLtSpMM", stream, &c);
  if (MC_FAILED(st)) return st;
  size_t S = mc_splt_struct_bytes();
  float alpha = 1.0f, beta = 1.0f; /* upstream: ALPHABETA(CUDA_R_32F) */
  LT_TRY(&c, "cusparseLtSpMMACompress",
         mc_splt.cusparseLtSpMMACompress(c.h, LT_PLAN(a, S), *LT_SP_VALUES(a), compressed,
                                         compressed_buffer, c.stream));
  /* D = A*B + C with C == D. Stock: the NULL stream (no streams given); cached: the stream. */
  CUstream streams[1] = {c.stream};
  int nstreams = mc_disabled() ? 0 : 1;
  LT_TRY(&c, "cusparseLtMatmul",
         mc_splt.cusparseLtMatmul(c.h, LT_PLAN(a, S), &alpha, compressed, *LT_DN_VALUES(b), &beta,
                                  *LT_DN_VALUES(cm), *LT_DN_VALUES(cm), workspace,
                                  nstreams ? streams : NULL, nstreams));
  /* Upstream destroys the matrix descriptor here and again in mgpuDestroyCuSparseLtSpMat; the
   * plan is the SpMM's: destroy it here, the descriptor once, in mgpuDestroyCuSparseLtSpMat. */
  LT_TRY(&c, "cusparseLtMatmulPlanDestroy", mc_splt.cusparseLtMatmulPlanDestroy(LT_PLAN(a, S)));
  lt_end(&c);
  return MC_OK;
}

/* ---- fork ---- */

void mc_sparselt_fork_prepare(void) { pthread_mutex_lock(&g_lt_lock); }
void mc_sparselt_fork_parent(void) { pthread_mutex_unlock(&g_lt_lock); }
void mc_sparselt_fork_child(void) {
  /* The parent's handles belong to its contexts: forget them (no library call). */
  g_lt_stock = NULL;
  memset(g_lt_handles, 0, sizeof g_lt_handles);
  pthread_mutex_unlock(&g_lt_lock);
}
