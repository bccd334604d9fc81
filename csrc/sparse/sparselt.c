/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
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
#include "support/stats.h"
#include "sparse/sparse_lib.h"
#include "sparse/sparselt_plans.h"
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

/* Cached mode, where the reserved space has room (cuSPARSELt >= 0.6: S = 512), our record of a
 * matrix follows its structs: what its create was given (the key of a kept plan,
 * sparselt_plans.h) and, for the 2:4 matrix, the kept plan it holds from its BufferSize until it
 * is destroyed. Written only by the creates (cleared first), so a record with the magic describes
 * the descriptor beside it. Without room (cuSPARSELt 0.5) plans are made per call, as upstream. */
typedef struct lt_rec {
  uint64_t magic;      /* LT_REC_MAGIC once the descriptor beside it is made, else 0 */
  int64_t rows, cols;  /* as given to the create */
  int32_t dtype;       /* as given to the create */
  int32_t device;      /* the device whose handle made the descriptor */
  mc_lt_plan *plan;    /* 2:4 matrix: the kept plan it holds (owned until destroyed), or NULL */
} lt_rec;
#define LT_REC_MAGIC 0x6D6763524543ULL /* "mgcREC" */
#define LT_SP_REC_OFF(S) (4 * (S))
#define LT_DN_REC_OFF(S) (S)

/* The record of a sparse (sparse != 0) or dense matrix's space, or NULL where there is no room or
 * in stock mode. */
static lt_rec *lt_rec_of(void *space, int sparse) {
  if (mc_disabled()) return NULL;
  size_t S = mc_splt_struct_bytes();
  size_t off = sparse ? LT_SP_REC_OFF(S) : LT_DN_REC_OFF(S);
  size_t limit = (sparse ? MC_SPLT_SPMAT_RESERVED : MC_SPLT_DNMAT_RESERVED) - 8;
  if (off + sizeof(lt_rec) > limit) return NULL;
  return (lt_rec *)((unsigned char *)space + off);
}

/* The record of a made matrix (magic present), or NULL. */
static lt_rec *lt_rec_made(void *space, int sparse) {
  lt_rec *r = lt_rec_of(space, sparse);
  return r && r->magic == LT_REC_MAGIC ? r : NULL;
}

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
  MC_STAT_INC(device_ops); /* work on the stream: a host_shared block it may touch is not freed
                            as untouched (allocator.c) */
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
  lt_rec *rec = lt_rec_of(dh, 0);
  if (rec) memset(rec, 0, sizeof *rec);
  *LT_DN_VALUES(dh) = values;
  LT_TRY(&c, "cusparseLtDenseDescriptorInit",
         mc_splt.cusparseLtDenseDescriptorInit(c.h, LT_MAT(dh), rows, cols, /*lda=*/cols,
                                               /*alignment=*/16, dtp, MC_CUSPARSE_ORDER_ROW));
  if (rec) *rec = (lt_rec){LT_REC_MAGIC, rows, cols, dtp, c.use.device, NULL};
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
  /* A record still holding a plan means the program never destroyed this matrix: that plan is
   * left (leaked, never reused), as a record is trusted only from its create on. */
  lt_rec *rec = lt_rec_of(sh, 1);
  if (rec) memset(rec, 0, sizeof *rec);
  *LT_SP_VALUES(sh) = values;
  LT_TRY(&c, "cusparseLtStructuredDescriptorInit",
         mc_splt.cusparseLtStructuredDescriptorInit(c.h, LT_MAT(sh), rows, cols, /*ld=*/cols,
                                                    /*alignment=*/16, dtp, MC_CUSPARSE_ORDER_ROW,
                                                    MC_CUSPARSELT_SPARSITY_50_PERCENT));
  if (rec) *rec = (lt_rec){LT_REC_MAGIC, rows, cols, dtp, c.use.device, NULL};
  lt_end(&c);
  return MC_OK;
}

mc_status mc_sparselt_destroy_spmat(void *sh, CUstream stream) {
  lt_rec *rec = sh ? lt_rec_made(sh, 1) : NULL;
  if (rec && rec->plan) { /* the kept plan its BufferSize took goes back */
    mc_lt_plan_give(rec->plan, stream);
    rec->plan = NULL;
  }
  return destroy_mat("mgpuDestroyCuSparseLtSpMat",
                     "cusparseLtMatDescriptorDestroy(&(spmat_handle->mat))", sh);
}

/* The prune check's flag, read after the check (synchronises the stream, as upstream); warns
 * when the matrix is not 2:4. `kept`: the flag of a kept plan, zeroed again when it is not (and
 * the zeroing waited for: the plan's next user may run on another stream). Cached mode. */
static mc_status read_flag(int *dvalid, CUstream stream, int kept) {
  int valid = 0;
  mc_status st = mc_memcpy(&valid, dvalid, sizeof valid, stream);
  if (!MC_FAILED(st)) st = mc_stream_synchronize(stream);
  if (MC_FAILED(st)) return st;
  if (valid != 0) {
    fprintf(stderr, "CUPARSE-LT: sparse matrix is not 2:4; computed results will be invalid\n");
    if (kept) {
      st = mc_memset32(dvalid, 0, 1, stream);
      if (!MC_FAILED(st)) st = mc_stream_synchronize(stream);
    }
  }
  return st;
}

/* Cached mode: the kept plan for a matmul of these matrices (taken by a's record), or NULL with
 * MC_OK where plans are not kept (no room for records, a matrix not made by our creates, matrices
 * of different devices). */
static mc_status take_plan(lt_call *c, void *a, void *b, void *cm, int32_t ma, int32_t mb,
                           int32_t compute, CUstream stream, mc_lt_plan **out) {
  *out = NULL;
  lt_rec *ra = lt_rec_made(a, 1), *rb = lt_rec_made(b, 0), *rc = lt_rec_made(cm, 0);
  if (!ra || !rb || !rc) return MC_OK;
  if (ra->device != c->use.device || rb->device != c->use.device || rc->device != c->use.device)
    return MC_OK;
  if (ra->plan) { /* a second BufferSize for the same matrix: the first one's plan goes back */
    mc_lt_plan_give(ra->plan, stream);
    ra->plan = NULL;
  }
  mc_lt_key key;
  memset(&key, 0, sizeof key);
  key.device = c->use.device;
  key.op_a = ma, key.op_b = mb, key.compute = compute;
  key.a_rows = ra->rows, key.a_cols = ra->cols, key.a_type = ra->dtype;
  key.b_rows = rb->rows, key.b_cols = rb->cols, key.b_type = rb->dtype;
  key.c_rows = rc->rows, key.c_cols = rc->cols, key.c_type = rc->dtype;
  mc_status st = mc_lt_plan_take(&key, c->h, stream, c->stream, out);
  if (!MC_FAILED(st)) ra->plan = *out;
  return st;
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
  mc_lt_plan *kp = NULL;
  if (!mc_disabled()) {
    st = take_plan(&c, a, b, cm, ma, mb, mc_splt_compute_type(ctp), stream, &kp);
    if (MC_FAILED(st)) {
      lt_end(&c);
      return st;
    }
  }
  /* The matmul descriptor and plan used below: the kept plan's, or made here in a's space. */
  void *matmul = kp ? MC_LT_PLAN_MATMUL(kp, S) : LT_MATMUL(a, S);
  void *plan = kp ? MC_LT_PLAN_PLAN(kp, S) : LT_PLAN(a, S);
  if (!kp) {
    LT_TRY(&c, "cusparseLtMatmulDescriptorInit",
           mc_splt.cusparseLtMatmulDescriptorInit(c.h, LT_MATMUL(a, S), ma, mb, LT_MAT(a),
                                                  LT_MAT(b), LT_MAT(cm), LT_MAT(cm),
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
  }
  /* From here a failure leaves the kept plan to be destroyed when it goes back (its flag may
   * still be written by an enqueued check). */
  if (kp) kp->broken = 1;
  void *values = *LT_SP_VALUES(a);
  if (prune_flag > 0) /* in place */
    LT_TRY(&c, "cusparseLtSpMMAPrune",
           mc_splt.cusparseLtSpMMAPrune(c.h, matmul, values, values,
                                        MC_CUSPARSELT_PRUNE_SPMMA_STRIP, c.stream));
  int *dvalid = NULL;
  if (prune_flag == 2 && kp) { /* the kept plan's flag: zero */
    dvalid = kp->flag;
  } else if (prune_flag == 2) { /* check the structure (synchronises the stream, as upstream) */
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
  }
  if (dvalid)
    LT_TRY(&c, "cusparseLtSpMMAPruneCheck",
           mc_splt.cusparseLtSpMMAPruneCheck(c.h, matmul, values, dvalid, c.stream));
  LT_TRY(&c, "cusparseLtMatmulGetWorkspace",
         mc_splt.cusparseLtMatmulGetWorkspace(c.h, plan, (size_t *)&sizes[0]));
  LT_TRY(&c, "cusparseLtSpMMACompressedSize",
         mc_splt.cusparseLtSpMMACompressedSize(c.h, plan, (size_t *)&sizes[1],
                                               (size_t *)&sizes[2]));
  lt_end(&c);
  if (dvalid && mc_disabled()) {
    int valid = 0;
    mc_stock_memcpy(&valid, dvalid, sizeof valid, stream);
    mc_stock_stream_synchronize(stream);
    mc_stock_mem_free(dvalid, stream);
    if (valid != 0)
      fprintf(stderr, "CUPARSE-LT: sparse matrix is not 2:4; computed results will be invalid\n");
  } else if (dvalid) {
    st = read_flag(dvalid, stream, kp != NULL);
    if (!kp) {
      mc_status fst = mc_mem_free(dvalid, stream);
      if (!MC_FAILED(st)) st = fst;
    }
    if (MC_FAILED(st)) return st;
  }
  if (kp) kp->broken = 0;
  return MC_OK;
}

mc_status mc_sparselt_spmm(void *a, void *b, void *cm, void *workspace, void *compressed,
                           void *compressed_buffer, CUstream stream) {
  if (!a || !b || !cm) return MC_FAIL("mgpuCuSparseLtSpMM", MC_E_NULL_ARGUMENT);
  lt_call c;
  mc_status st = lt_begin("mgpuCuSparseLtSpMM", stream, &c);
  if (MC_FAILED(st)) return st;
  size_t S = mc_splt_struct_bytes();
  lt_rec *ra = lt_rec_made(a, 1);
  mc_lt_plan *kp = ra ? ra->plan : NULL; /* kept: used, and kept until a is destroyed */
  void *plan = kp ? MC_LT_PLAN_PLAN(kp, S) : LT_PLAN(a, S);
  float alpha = 1.0f, beta = 1.0f; /* upstream: ALPHABETA(CUDA_R_32F) */
  LT_TRY(&c, "cusparseLtSpMMACompress",
         mc_splt.cusparseLtSpMMACompress(c.h, plan, *LT_SP_VALUES(a), compressed,
                                         compressed_buffer, c.stream));
  /* D = A*B + C with C == D. Stock: the NULL stream (no streams given); cached: the stream. */
  CUstream streams[1] = {c.stream};
  int nstreams = mc_disabled() ? 0 : 1;
  LT_TRY(&c, "cusparseLtMatmul",
         mc_splt.cusparseLtMatmul(c.h, plan, &alpha, compressed, *LT_DN_VALUES(b), &beta,
                                  *LT_DN_VALUES(cm), *LT_DN_VALUES(cm), workspace,
                                  nstreams ? streams : NULL, nstreams));
  /* Upstream destroys the matrix descriptor here and again in mgpuDestroyCuSparseLtSpMat; the
   * plan is the SpMM's: destroy it here, the descriptor once, in mgpuDestroyCuSparseLtSpMat.
   * A kept plan is not destroyed. */
  if (!kp)
    LT_TRY(&c, "cusparseLtMatmulPlanDestroy", mc_splt.cusparseLtMatmulPlanDestroy(plan));
  lt_end(&c);
  return MC_OK;
}

/* ---- fork ---- */

void mc_sparselt_fork_prepare(void) {
  pthread_mutex_lock(&g_lt_lock);
  mc_lt_plans_fork_prepare();
}
void mc_sparselt_fork_parent(void) {
  mc_lt_plans_fork_parent();
  pthread_mutex_unlock(&g_lt_lock);
}
void mc_sparselt_fork_child(void) {
  mc_lt_plans_fork_child();
  /* The parent's handles belong to its contexts: forget them (no library call). */
  g_lt_stock = NULL;
  memset(g_lt_handles, 0, sizeof g_lt_handles);
  pthread_mutex_unlock(&g_lt_lock);
}
