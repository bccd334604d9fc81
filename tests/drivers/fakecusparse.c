/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* fakecusparse.c - a recording fake of libcusparse and libcusparseLt for the CPU tests.
 *
 * One library exports both symbol tables (csrc/sparse/sparse_api.h); tests point MGPU_CACHED_CUSPARSE and
 * MGPU_CACHED_CUSPARSELT at copies of it. It counts and logs every call by name (fake_count,
 * fake_log, fake_fail as the fake driver), records what the sparse entry points must pass on
 * (the stream set on the handle used, the CUDA context current when a handle was made, alpha,
 * compute types, buffers, descriptor fields), and computes for real what a test can check in host
 * memory (the fake driver's device memory is host memory): CSR SpMV in f32/f64 with 32- or 64-bit
 * indices. cuSPARSELt: FAKECUSPARSELT_VERSION (default 801 = 0.8.1) and the struct size
 * FAKECUSPARSELT_STRUCT_BYTES (default as the real library: 11024 below 0.6, 512 from 0.6) decide
 * what it reports and how many bytes it writes into each caller-owned struct (all of them).
 * Built with -DFAKE_NO_BSR it lacks cusparseCreateBsr (cuSPARSE before 12.1).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../csrc/sparse/sparse_api.h"

enum {
#define IDX(field, name, ret, params, args, req) IDX_##field,
  MC_CUSPARSE_SYMBOLS(IDX) MC_CUSPARSELT_SYMBOLS(IDX)
#undef IDX
  NSYM
};
static const char *const k_fields[] = {
#define NAME(field, name, ret, params, args, req) #field,
    MC_CUSPARSE_SYMBOLS(NAME) MC_CUSPARSELT_SYMBOLS(NAME)
#undef NAME
};

#include "fake_recording.h"

static size_t (*unused_extent_)(const unsigned char *) __attribute__((unused)) = elf_or_text_extent;

static int fake_before_call(void) { return 0; }

/* ---- what tests read back ---- */
static void *g_create_ctx;          /* CUDA context current at the last cusparseCreate/LtInit */
static void *g_last_handle;         /* handle of the last operation */
static CUstream g_last_stream;      /* stream set on that handle (cuSPARSE) or passed (Lt) */
static double g_last_alpha, g_last_beta;
static int g_last_compute;          /* compute type of the last operation / matmul descriptor */
static void *g_last_buffer;
static int g_handles_live;
static int g_lt_nstreams;

struct fake_handle { int magic; CUstream stream; };
struct fake_desc { int magic, kind; int64_t rows, cols, nnz, ld; void *p0, *p1, *values;
                   int t0, t1, dtype, order; };
#define H_MAGIC 0x5EA5
#define D_MAGIC 0xDE5C

static void *current_ctx(void) {
  const char *drv = getenv("MGPU_CACHED_CUDA_DRIVER");
  void *h = drv ? dlopen(drv, RTLD_NOW | RTLD_NOLOAD) : NULL;
  void *(*f)(void) = h ? (void *(*)(void))dlsym(h, "fake_current_context") : NULL;
  return f ? f() : NULL;
}

static double scalar(const void *p, int type) {
  if (!p) return 0;
  switch (type) {
  case MC_CUDA_R_32F: case MC_CUDA_C_32F: return *(const float *)p;
  case MC_CUDA_R_16F: case MC_CUDA_C_16F: return *(const uint16_t *)p == 0x3C00 ? 1.0 : -1.0;
  case MC_CUDA_R_16BF: case MC_CUDA_C_16BF: return *(const uint16_t *)p == 0x3F80 ? 1.0 : -1.0;
  default: return *(const double *)p;
  }
}

static int valid_handle(void *h) { return h && known(h) && ((struct fake_handle *)h)->magic == H_MAGIC; }
static int valid_desc(void *d) { return d && known(d) && ((struct fake_desc *)d)->magic == D_MAGIC; }

static struct fake_desc *new_desc(int kind) {
  struct fake_desc *d = calloc(1, sizeof *d);
  d->magic = D_MAGIC;
  d->kind = kind;
  remember(d);
  return d;
}

#define INVALID 3
#define NOT_INIT 1

/* ---- cuSPARSE ---- */
EXPORT cusparseStatus_t cusparseGetProperty(int type, int *value) {
  BEGIN(cusparseGetProperty);
  *value = type == 0 ? 12 : type == 1 ? 6 : 3;
  RETURN(0);
}
EXPORT const char *cusparseGetErrorString(cusparseStatus_t s) {
  return s == 1 ? "initialization error" : s == 3 ? "invalid value" : s == 10 ? "operation not supported" : "fake error";
}
EXPORT cusparseStatus_t cusparseCreate(cusparseHandle_t *h) {
  BEGIN(cusparseCreate);
  struct fake_handle *f = calloc(1, sizeof *f);
  f->magic = H_MAGIC;
  remember(f);
  g_handles_live++;
  g_create_ctx = current_ctx();
  *h = (cusparseHandle_t)f;
  RETURN(0);
}
EXPORT cusparseStatus_t cusparseDestroy(cusparseHandle_t h) {
  BEGIN(cusparseDestroy);
  if (!valid_handle(h)) RETURN(NOT_INIT);
  ((struct fake_handle *)h)->magic = 0;
  g_handles_live--;
  RETURN(0);
}
EXPORT cusparseStatus_t cusparseSetStream(cusparseHandle_t h, CUstream s) {
  BEGIN(cusparseSetStream);
  if (!valid_handle(h)) RETURN(NOT_INIT);
  ((struct fake_handle *)h)->stream = s;
  RETURN(0);
}
EXPORT cusparseStatus_t cusparseCreateDnVec(void **v, int64_t size, void *values, int type) {
  BEGIN(cusparseCreateDnVec);
  struct fake_desc *d = new_desc(1);
  d->rows = size; d->values = values; d->dtype = type;
  *v = d;
  RETURN(0);
}
EXPORT cusparseStatus_t cusparseDestroyDnVec(void *v) {
  BEGIN(cusparseDestroyDnVec);
  if (!valid_desc(v)) RETURN(INVALID);
  ((struct fake_desc *)v)->magic = 0;
  RETURN(0);
}
EXPORT cusparseStatus_t cusparseCreateDnMat(void **m, int64_t rows, int64_t cols, int64_t ld, void *values, int type, int order) {
  BEGIN(cusparseCreateDnMat);
  struct fake_desc *d = new_desc(2);
  d->rows = rows; d->cols = cols; d->ld = ld; d->values = values; d->dtype = type; d->order = order;
  *m = d;
  RETURN(0);
}
EXPORT cusparseStatus_t cusparseDestroyDnMat(void *m) {
  BEGIN(cusparseDestroyDnMat);
  if (!valid_desc(m)) RETURN(INVALID);
  ((struct fake_desc *)m)->magic = 0;
  RETURN(0);
}
static struct fake_desc *sp(int kind, int64_t r, int64_t c, int64_t nnz, void *p0, void *p1, void *v, int t0, int t1, int base, int type) {
  struct fake_desc *d = new_desc(kind);
  d->rows = r; d->cols = c; d->nnz = nnz; d->p0 = p0; d->p1 = p1; d->values = v;
  d->t0 = t0; d->t1 = t1; d->dtype = type; d->order = base;
  return d;
}
EXPORT cusparseStatus_t cusparseCreateCoo(void **m, int64_t r, int64_t c, int64_t nnz, void *ri, void *ci, void *v, int it, int base, int type) {
  BEGIN(cusparseCreateCoo);
  *m = sp(3, r, c, nnz, ri, ci, v, it, it, base, type);
  RETURN(0);
}
EXPORT cusparseStatus_t cusparseCreateCsr(void **m, int64_t r, int64_t c, int64_t nnz, void *pos, void *ci, void *v, int pt, int it, int base, int type) {
  BEGIN(cusparseCreateCsr);
  *m = sp(4, r, c, nnz, pos, ci, v, pt, it, base, type);
  RETURN(0);
}
EXPORT cusparseStatus_t cusparseCreateCsc(void **m, int64_t r, int64_t c, int64_t nnz, void *pos, void *ri, void *v, int pt, int it, int base, int type) {
  BEGIN(cusparseCreateCsc);
  *m = sp(5, r, c, nnz, pos, ri, v, pt, it, base, type);
  RETURN(0);
}
#ifndef FAKE_NO_BSR
EXPORT cusparseStatus_t cusparseCreateBsr(void **m, int64_t br, int64_t bc, int64_t bnnz, int64_t rb, int64_t cb, void *pos, void *ci, void *v, int pt, int it, int base, int type, int order) {
  BEGIN(cusparseCreateBsr);
  struct fake_desc *d = sp(6, br, bc, bnnz, pos, ci, v, pt, it, base, type);
  d->ld = rb * 1000 + cb;
  (void)order;
  *m = d;
  RETURN(0);
}
#endif
EXPORT cusparseStatus_t cusparseDestroySpMat(void *m) {
  BEGIN(cusparseDestroySpMat);
  if (!valid_desc(m)) RETURN(INVALID);
  ((struct fake_desc *)m)->magic = 0;
  RETURN(0);
}
static int64_t idx(const void *p, int type, int64_t i) {
  return type == 3 ? ((const int64_t *)p)[i] : ((const int32_t *)p)[i];
}
/* Record an operation on handle h; 0 or a status. */
static int op(void *h, const void *alpha, const void *beta, int ctp, void *buf) {
  if (!valid_handle(h)) return NOT_INIT;
  g_last_handle = h;
  g_last_stream = ((struct fake_handle *)h)->stream;
  g_last_alpha = scalar(alpha, ctp);
  g_last_beta = scalar(beta, ctp);
  g_last_compute = ctp;
  g_last_buffer = buf;
  return 0;
}
EXPORT cusparseStatus_t cusparseSpMV_bufferSize(cusparseHandle_t h, int opA, const void *alpha, void *A, void *x, const void *beta, void *y, int ctp, int alg, size_t *size) {
  BEGIN(cusparseSpMV_bufferSize);
  (void)opA; (void)A; (void)x; (void)y; (void)alg;
  int s = op(h, alpha, beta, ctp, NULL);
  if (!s) *size = 96;
  RETURN(s);
}
EXPORT cusparseStatus_t cusparseSpMV(cusparseHandle_t h, int opA, const void *alpha, void *Ap, void *xp, const void *beta, void *yp, int ctp, int alg, void *buf) {
  BEGIN(cusparseSpMV);
  (void)alg;
  int s = op(h, alpha, beta, ctp, buf);
  if (s) RETURN(s);
  struct fake_desc *A = Ap, *x = xp, *y = yp;
  if (!valid_desc(A) || !valid_desc(x) || !valid_desc(y) || opA != 0) RETURN(INVALID);
  if (A->kind == 4) { /* y = alpha*A*x + beta*y, CSR */
    for (int64_t i = 0; i < A->rows; ++i) {
      double acc = 0;
      for (int64_t k = idx(A->p0, A->t0, i); k < idx(A->p0, A->t0, i + 1); ++k) {
        int64_t j = idx(A->p1, A->t1, k);
        double a = A->dtype == MC_CUDA_R_32F ? ((float *)A->values)[k] : ((double *)A->values)[k];
        double xv = x->dtype == MC_CUDA_R_32F ? ((float *)x->values)[j] : ((double *)x->values)[j];
        acc += a * xv;
      }
      if (y->dtype == MC_CUDA_R_32F)
        ((float *)y->values)[i] = (float)(g_last_alpha * acc + g_last_beta * ((float *)y->values)[i]);
      else
        ((double *)y->values)[i] = g_last_alpha * acc + g_last_beta * ((double *)y->values)[i];
    }
  }
  RETURN(0);
}
#define OP2(name, sizeexpr)                                                                      \
  EXPORT cusparseStatus_t name(cusparseHandle_t h, int opA, int opB, const void *alpha, void *A,  \
                               void *B, const void *beta, void *C, int ctp, int alg, void *arg) {  \
    BEGIN(name);                                                                                 \
    (void)opA; (void)opB; (void)A; (void)B; (void)C; (void)alg;                                  \
    int s = op(h, alpha, beta, ctp, sizeexpr ? NULL : arg);                                      \
    if (!s && sizeexpr) *(size_t *)arg = 128;                                                    \
    RETURN(s);                                                                                   \
  }
OP2(cusparseSpMM_bufferSize, 1)
OP2(cusparseSpMM, 0)
OP2(cusparseSDDMM_bufferSize, 1)
OP2(cusparseSDDMM, 0)
EXPORT cusparseStatus_t cusparseSpGEMM_createDescr(void **d) {
  BEGIN(cusparseSpGEMM_createDescr);
  *d = new_desc(7);
  RETURN(0);
}
EXPORT cusparseStatus_t cusparseSpGEMM_destroyDescr(void *d) {
  BEGIN(cusparseSpGEMM_destroyDescr);
  if (!valid_desc(d)) RETURN(INVALID);
  ((struct fake_desc *)d)->magic = 0;
  RETURN(0);
}
/* Work estimation / compute: size query with a null buffer (answers 64 + 1000*phase), else
 * records the buffer; compute with a buffer sets C's nnz to A's nnz + B's nnz. */
static long g_spgemm_dirty_c; /* work estimations that saw an empty C with nonzero row offsets */
EXPORT long fake_sp_spgemm_dirty_c(void) { return g_spgemm_dirty_c; }
__attribute__((destructor)) static void report_at_exit(void) {
  const char *v = getenv("FAKECUSPARSE_REPORT");
  if (v && *v == '1') printf("fakecusparse: spgemm_dirty_c=%ld\n", g_spgemm_dirty_c);
}
EXPORT cusparseStatus_t cusparseSpGEMM_workEstimation(cusparseHandle_t h, int opA, int opB, const void *alpha, void *A, void *B, const void *beta, void *C, int ctp, int alg, void *d, size_t *size, void *buf) {
  BEGIN(cusparseSpGEMM_workEstimation);
  (void)opA; (void)opB; (void)A; (void)B; (void)alg;
  struct fake_desc *c = C;
  if (valid_desc(c) && c->kind == 4 && c->nnz == 0 && c->p0) /* the real library reads these */
    for (int64_t i = 0; i <= c->rows; ++i)
      if (idx(c->p0, c->t0, i) != 0) {
        g_spgemm_dirty_c++;
        break;
      }
  int s = op(h, alpha, beta, ctp, buf);
  if (!s && !valid_desc(d)) s = INVALID;
  if (!s && !buf) *size = 1064;
  RETURN(s);
}
EXPORT cusparseStatus_t cusparseSpGEMM_compute(cusparseHandle_t h, int opA, int opB, const void *alpha, void *A, void *B, const void *beta, void *C, int ctp, int alg, void *d, size_t *size, void *buf) {
  BEGIN(cusparseSpGEMM_compute);
  (void)opA; (void)opB; (void)alg;
  int s = op(h, alpha, beta, ctp, buf);
  if (!s && (!valid_desc(d) || !valid_desc(A) || !valid_desc(B) || !valid_desc(C))) s = INVALID;
  if (!s && !buf) *size = 2064;
  if (!s && buf) ((struct fake_desc *)C)->nnz = ((struct fake_desc *)A)->nnz + ((struct fake_desc *)B)->nnz;
  RETURN(s);
}
EXPORT cusparseStatus_t cusparseSpGEMM_copy(cusparseHandle_t h, int opA, int opB, const void *alpha, void *A, void *B, const void *beta, void *C, int ctp, int alg, void *d) {
  BEGIN(cusparseSpGEMM_copy);
  (void)opA; (void)opB; (void)A; (void)B; (void)C; (void)alg;
  int s = op(h, alpha, beta, ctp, NULL);
  if (!s && !valid_desc(d)) s = INVALID;
  RETURN(s);
}
EXPORT cusparseStatus_t cusparseSpMatGetSize(void *m, int64_t *r, int64_t *c, int64_t *nnz) {
  BEGIN(cusparseSpMatGetSize);
  struct fake_desc *d = m;
  if (!valid_desc(d)) RETURN(INVALID);
  *r = d->rows; *c = d->cols; *nnz = d->nnz;
  RETURN(0);
}
EXPORT cusparseStatus_t cusparseCsrGet(void *m, int64_t *r, int64_t *c, int64_t *nnz, void **p0, void **p1, void **v, int *t0, int *t1, int *base, int *type) {
  BEGIN(cusparseCsrGet);
  struct fake_desc *d = m;
  if (!valid_desc(d) || d->kind != 4) RETURN(INVALID);
  *r = d->rows; *c = d->cols; *nnz = d->nnz; *p0 = d->p0; *p1 = d->p1; *v = d->values;
  *t0 = d->t0; *t1 = d->t1; *base = d->order; *type = d->dtype;
  RETURN(0);
}
EXPORT cusparseStatus_t cusparseCsrSetPointers(void *m, void *p, void *c, void *v) {
  BEGIN(cusparseCsrSetPointers);
  struct fake_desc *d = m;
  if (!valid_desc(d)) RETURN(INVALID);
  d->p0 = p; d->p1 = c; d->values = v;
  RETURN(0);
}

/* ---- cuSPARSELt ---- */
static int lt_version(void) {
  const char *v = getenv("FAKECUSPARSELT_VERSION");
  return v && *v ? atoi(v) : 801;
}
static size_t lt_bytes(void) {
  const char *v = getenv("FAKECUSPARSELT_STRUCT_BYTES");
  if (v && *v) return (size_t)atol(v);
  return lt_version() < 600 ? 11024 : 512;
}
/* Fill a whole caller-owned struct (as a real library may) and tag it. */
static void lt_fill(void *p, uint32_t tag) {
  memset(p, 0xA5, lt_bytes());
  memcpy(p, &tag, 4);
}
static uint32_t lt_tag(const void *p) { uint32_t t = 0; if (p) memcpy(&t, p, 4); return t; }
#define LT_HANDLE 0x4C54484EU
#define LT_MAT 0x4C544D41U
#define LT_MATMUL 0x4C544D4DU
#define LT_ALG 0x4C54414CU
#define LT_PLAN 0x4C54504CU
#define LT_DEAD 0xDEADDEADU
static int lt_ok(const void *h) { return lt_tag(h) == LT_HANDLE; }
/* The fake's matmul descriptor keeps pointers to its A, B, C, D descriptors and a plan a pointer to
 * its matmul descriptor (as a real library may: the structs are opaque); the calls that use a plan
 * fail when any of those was destroyed since (a plan outliving the descriptors it was made from). */
#define LT_REF_OFF 16
static void lt_set_ref(void *p, int i, const void *ref) { memcpy((char *)p + LT_REF_OFF + 8 * i, &ref, 8); }
static const void *lt_ref(const void *p, int i) { const void *r; memcpy(&r, (const char *)p + LT_REF_OFF + 8 * i, 8); return r; }
static int lt_plan_live(const void *plan) {
  if (lt_tag(plan) != LT_PLAN) return 0;
  const void *mm = lt_ref(plan, 0);
  if (lt_tag(mm) != LT_MATMUL) return 0;
  for (int i = 0; i < 4; ++i)
    if (lt_tag(lt_ref(mm, i)) != LT_MAT) return 0;
  return 1;
}

EXPORT cusparseStatus_t cusparseLtGetProperty(int type, int *value) {
  BEGIN(cusparseLtGetProperty);
  int v = lt_version();
  *value = type == 0 ? v / 1000 : type == 1 ? v / 100 % 10 : v % 100;
  RETURN(0);
}
EXPORT cusparseStatus_t cusparseLtInit(void *h) {
  BEGIN(cusparseLtInit);
  lt_fill(h, LT_HANDLE);
  g_create_ctx = current_ctx();
  RETURN(0);
}
EXPORT cusparseStatus_t cusparseLtDestroy(const void *h) {
  BEGIN(cusparseLtDestroy);
  if (!lt_ok(h)) RETURN(NOT_INIT);
  memcpy((void *)h, &(uint32_t){LT_DEAD}, 4);
  RETURN(0);
}
EXPORT cusparseStatus_t cusparseLtDenseDescriptorInit(const void *h, void *m, int64_t r, int64_t c, int64_t ld, uint32_t al, int type, int order) {
  BEGIN(cusparseLtDenseDescriptorInit);
  if (!lt_ok(h)) RETURN(NOT_INIT);
  if (ld != c || al != 16 || order != MC_CUSPARSE_ORDER_ROW) RETURN(INVALID);
  lt_fill(m, LT_MAT);
  int64_t f[3] = {r, c, type};
  memcpy((char *)m + 8, f, sizeof f);
  RETURN(0);
}
EXPORT cusparseStatus_t cusparseLtStructuredDescriptorInit(const void *h, void *m, int64_t r, int64_t c, int64_t ld, uint32_t al, int type, int order, int sparsity) {
  BEGIN(cusparseLtStructuredDescriptorInit);
  if (!lt_ok(h)) RETURN(NOT_INIT);
  if (ld != c || al != 16 || order != MC_CUSPARSE_ORDER_ROW || sparsity != 0) RETURN(INVALID);
  lt_fill(m, LT_MAT);
  int64_t f[3] = {r, c, type};
  memcpy((char *)m + 8, f, sizeof f);
  RETURN(0);
}
EXPORT cusparseStatus_t cusparseLtMatDescriptorDestroy(const void *m) {
  BEGIN(cusparseLtMatDescriptorDestroy);
  if (lt_tag(m) != LT_MAT) RETURN(INVALID); /* a second destroy is an error here */
  memcpy((void *)m, &(uint32_t){LT_DEAD}, 4);
  RETURN(0);
}
EXPORT cusparseStatus_t cusparseLtMatmulDescriptorInit(const void *h, void *mm, int opA, int opB, const void *A, const void *B, const void *C, const void *D, int ctp) {
  BEGIN(cusparseLtMatmulDescriptorInit);
  (void)opA; (void)opB;
  if (!lt_ok(h)) RETURN(NOT_INIT);
  if (lt_tag(A) != LT_MAT || lt_tag(B) != LT_MAT || lt_tag(C) != LT_MAT || lt_tag(D) != LT_MAT) RETURN(INVALID);
  g_last_compute = ctp;
  lt_fill(mm, LT_MATMUL);
  lt_set_ref(mm, 0, A); lt_set_ref(mm, 1, B); lt_set_ref(mm, 2, C); lt_set_ref(mm, 3, D);
  RETURN(0);
}
EXPORT cusparseStatus_t cusparseLtMatmulAlgSelectionInit(const void *h, void *alg, const void *mm, int kind) {
  BEGIN(cusparseLtMatmulAlgSelectionInit);
  (void)kind;
  if (!lt_ok(h) || lt_tag(mm) != LT_MATMUL) RETURN(INVALID);
  lt_fill(alg, LT_ALG);
  RETURN(0);
}
EXPORT cusparseStatus_t cusparseLtMatmulAlgSetAttribute(const void *h, void *alg, int attr, const void *data, size_t n) {
  BEGIN(cusparseLtMatmulAlgSetAttribute);
  (void)attr; (void)data;
  if (!lt_ok(h) || lt_tag(alg) != LT_ALG || n != sizeof(int)) RETURN(INVALID);
  RETURN(0);
}
EXPORT cusparseStatus_t cusparseLtMatmulPlanInit(const void *h, void *plan, const void *mm, const void *alg) {
  BEGIN(cusparseLtMatmulPlanInit);
  if (!lt_ok(h) || lt_tag(mm) != LT_MATMUL || lt_tag(alg) != LT_ALG) RETURN(INVALID);
  lt_fill(plan, LT_PLAN);
  lt_set_ref(plan, 0, mm);
  RETURN(0);
}
EXPORT cusparseStatus_t cusparseLtMatmulPlanDestroy(const void *plan) {
  BEGIN(cusparseLtMatmulPlanDestroy);
  if (lt_tag(plan) != LT_PLAN) RETURN(INVALID);
  memcpy((void *)plan, &(uint32_t){LT_DEAD}, 4);
  RETURN(0);
}
EXPORT cusparseStatus_t cusparseLtMatmulGetWorkspace(const void *h, const void *plan, size_t *n) {
  BEGIN(cusparseLtMatmulGetWorkspace);
  if (!lt_ok(h) || lt_tag(plan) != LT_PLAN) RETURN(INVALID);
  *n = 4096;
  RETURN(0);
}
EXPORT cusparseStatus_t cusparseLtSpMMAPrune(const void *h, const void *mm, const void *in, void *out, int alg, CUstream s) {
  BEGIN(cusparseLtSpMMAPrune);
  (void)in; (void)out; (void)alg;
  if (!lt_ok(h) || lt_tag(mm) != LT_MATMUL) RETURN(INVALID);
  g_last_stream = s;
  RETURN(0);
}
EXPORT cusparseStatus_t cusparseLtSpMMAPruneCheck(const void *h, const void *mm, const void *in, int *valid, CUstream s) {
  BEGIN(cusparseLtSpMMAPruneCheck);
  (void)in;
  if (!lt_ok(h) || lt_tag(mm) != LT_MATMUL) RETURN(INVALID);
  const char *bad = getenv("FAKECUSPARSELT_NOT_24");
  /* as the real library (H100): the flag is only written when the check fails, so it must start
   * at 0; device memory is host memory in the fake driver */
  if (bad && *bad == '1') *valid = 1;
  g_last_stream = s;
  RETURN(0);
}
EXPORT cusparseStatus_t cusparseLtSpMMACompressedSize(const void *h, const void *plan, size_t *a, size_t *b) {
  BEGIN(cusparseLtSpMMACompressedSize);
  if (!lt_ok(h) || lt_tag(plan) != LT_PLAN) RETURN(INVALID);
  *a = 2048; *b = 512;
  RETURN(0);
}
EXPORT cusparseStatus_t cusparseLtSpMMACompress(const void *h, const void *plan, const void *dense, void *c, void *cb, CUstream s) {
  BEGIN(cusparseLtSpMMACompress);
  (void)dense; (void)c; (void)cb;
  if (!lt_ok(h) || !lt_plan_live(plan)) RETURN(INVALID);
  g_last_stream = s;
  RETURN(0);
}
static void *g_lt_args[6];
EXPORT cusparseStatus_t cusparseLtMatmul(const void *h, const void *plan, const void *alpha, const void *dA, const void *dB, const void *beta, const void *dC, void *dD, void *ws, CUstream *streams, int32_t n) {
  BEGIN(cusparseLtMatmul);
  if (!lt_ok(h) || !lt_plan_live(plan)) RETURN(INVALID);
  g_last_alpha = *(const float *)alpha;
  g_last_beta = *(const float *)beta;
  g_lt_nstreams = n;
  g_last_stream = n > 0 ? streams[0] : NULL;
  void *a[6] = {(void *)dA, (void *)dB, (void *)dC, dD, ws, (void *)h};
  memcpy(g_lt_args, a, sizeof a);
  RETURN(0);
}

/* ---- test control ---- */
EXPORT void *fake_sp_create_ctx(void) { return g_create_ctx; }
EXPORT void *fake_sp_last_handle(void) { return g_last_handle; }
EXPORT void *fake_sp_last_stream(void) { return g_last_stream; }
EXPORT double fake_sp_last_alpha(void) { return g_last_alpha; }
EXPORT double fake_sp_last_beta(void) { return g_last_beta; }
EXPORT int fake_sp_last_compute(void) { return g_last_compute; }
EXPORT void *fake_sp_last_buffer(void) { return g_last_buffer; }
EXPORT int fake_sp_handles_live(void) { return g_handles_live; }
EXPORT int fake_lt_nstreams(void) { return g_lt_nstreams; }
EXPORT void *fake_lt_arg(int i) { return i >= 0 && i < 6 ? g_lt_args[i] : NULL; }
EXPORT long fake_sp_desc_field(void *d, int which) {
  struct fake_desc *f = d;
  if (!valid_desc(f)) return -1;
  long v[] = {f->kind, f->rows, f->cols, f->nnz, f->ld, f->t0, f->t1, f->dtype, f->order};
  return which >= 0 && which < (int)(sizeof v / sizeof *v) ? v[which] : -1;
}
EXPORT void *fake_sp_desc_ptr(void *d, int which) {
  struct fake_desc *f = d;
  if (!valid_desc(f)) return NULL;
  return which == 0 ? f->p0 : which == 1 ? f->p1 : f->values;
}
