/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* sparselt_plans.c - kept cuSPARSELt matmul plans (cached mode; see sparselt_plans.h): making,
 * the per-device idle lists, destroying.
 *
 * Locking: g_plans_lock guards g_idle and g_nidle; it is never held across a library or driver
 * call.
 */
#include "sparse/sparselt_plans.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "memory/memory.h"
#include "platform/context.h"
#include "platform/driver.h"
#include "sparse/sparse_lib.h"

#define MAX_DEVICES 64

static pthread_mutex_t g_plans_lock = PTHREAD_MUTEX_INITIALIZER;
static mc_lt_plan *g_idle[MAX_DEVICES]; /* idle plans per device, most recently given first */
static int g_nidle[MAX_DEVICES];        /* their number (<= MC_LT_IDLE_MAX) */

/* Destroy what a plan made (the matmul descriptor and the algorithm selection have no destroy
 * call in the API upstream uses), free its flag (ordered by `stream`) and the plan. `made`: how
 * far its making got (0: nothing, 1: A, 2: A+B, 3: A+B+C, 4: + the plan). */
static void plan_free(mc_lt_plan *p, int made, CUstream stream) {
  size_t S = mc_splt_struct_bytes();
  if (made >= 4) mc_splt.cusparseLtMatmulPlanDestroy(MC_LT_PLAN_PLAN(p, S));
  if (made >= 3) mc_splt.cusparseLtMatDescriptorDestroy(MC_LT_PLAN_C(p, S));
  if (made >= 2) mc_splt.cusparseLtMatDescriptorDestroy(MC_LT_PLAN_B(p, S));
  if (made >= 1) mc_splt.cusparseLtMatDescriptorDestroy(MC_LT_PLAN_A(p, S));
  if (p->flag) mc_mem_free(p->flag, stream);
  free(p->mem);
  free(p);
}

/* Make a plan for `key`: the calls upstream makes in mgpuCusparseLtCreate2To4SpMat,
 * mgpuCreateCuSparseLtDnMat (twice) and mgpuCuSparseLtSpMMBufferSize, with the same arguments. */
static mc_status plan_make(const mc_lt_key *key, void *h, CUstream stream, CUstream dstream,
                           mc_lt_plan **out) {
  size_t S = mc_splt_struct_bytes();
  mc_lt_plan *p = calloc(1, sizeof *p);
  if (!p) return MC_FAIL("mgpuCuSparseLtSpMMBufferSize", MC_E_NO_MEMORY);
  p->key = *key;
  p->mem = aligned_alloc(16, 6 * S);
  if (!p->mem) {
    free(p);
    return MC_FAIL("mgpuCuSparseLtSpMMBufferSize", MC_E_NO_MEMORY);
  }
  memset(p->mem, 0, 6 * S);
  int made = 0;
  cusparseStatus_t s;
  const char *call = "cusparseLtStructuredDescriptorInit";
  s = mc_splt.cusparseLtStructuredDescriptorInit(h, MC_LT_PLAN_A(p, S), key->a_rows, key->a_cols,
                                                 key->a_cols, 16, key->a_type,
                                                 MC_CUSPARSE_ORDER_ROW,
                                                 MC_CUSPARSELT_SPARSITY_50_PERCENT);
  if (s) goto fail;
  made = 1;
  call = "cusparseLtDenseDescriptorInit";
  s = mc_splt.cusparseLtDenseDescriptorInit(h, MC_LT_PLAN_B(p, S), key->b_rows, key->b_cols,
                                            key->b_cols, 16, key->b_type, MC_CUSPARSE_ORDER_ROW);
  if (s) goto fail;
  made = 2;
  s = mc_splt.cusparseLtDenseDescriptorInit(h, MC_LT_PLAN_C(p, S), key->c_rows, key->c_cols,
                                            key->c_cols, 16, key->c_type, MC_CUSPARSE_ORDER_ROW);
  if (s) goto fail;
  made = 3;
  call = "cusparseLtMatmulDescriptorInit";
  s = mc_splt.cusparseLtMatmulDescriptorInit(h, MC_LT_PLAN_MATMUL(p, S), key->op_a, key->op_b,
                                             MC_LT_PLAN_A(p, S), MC_LT_PLAN_B(p, S),
                                             MC_LT_PLAN_C(p, S), MC_LT_PLAN_C(p, S), key->compute);
  if (s) goto fail;
  call = "cusparseLtMatmulAlgSelectionInit";
  s = mc_splt.cusparseLtMatmulAlgSelectionInit(h, MC_LT_PLAN_ALG(p, S), MC_LT_PLAN_MATMUL(p, S),
                                               MC_CUSPARSELT_MATMUL_ALG_DEFAULT);
  if (s) goto fail;
  int alg = 0;
  call = "cusparseLtMatmulAlgSetAttribute";
  s = mc_splt.cusparseLtMatmulAlgSetAttribute(h, MC_LT_PLAN_ALG(p, S),
                                              MC_CUSPARSELT_MATMUL_ALG_CONFIG_ID, &alg, sizeof alg);
  if (s) goto fail;
  call = "cusparseLtMatmulPlanInit";
  s = mc_splt.cusparseLtMatmulPlanInit(h, MC_LT_PLAN_PLAN(p, S), MC_LT_PLAN_MATMUL(p, S),
                                       MC_LT_PLAN_ALG(p, S));
  if (s) goto fail;
  made = 4;
  /* The prune check's flag: zero before its first use (memory from the cache may hold leftovers,
   * and the allocator's clearing can be off), on the stream the check will run on. */
  mc_status st = mc_mem_alloc(sizeof(int), stream, 0, &p->flag);
  if (MC_FAILED(st)) {
    p->flag = NULL;
    plan_free(p, made, stream);
    return st;
  }
  CUresult r = mc_cu.cuMemsetD32Async((CUdeviceptr)(uintptr_t)p->flag, 0, 1, dstream);
  if (r) {
    plan_free(p, made, stream);
    return MC_FAIL("cuMemsetD32Async(valid)", r);
  }
  *out = p;
  return MC_OK;
fail:
  plan_free(p, made, stream);
  return MC_SP_FAIL(call, s);
}

mc_status mc_lt_plan_take(const mc_lt_key *key, void *handle, CUstream stream, CUstream dstream,
                          mc_lt_plan **out) {
  if (key->device < 0 || key->device >= MAX_DEVICES) return MC_FAIL("cusparseLtInit", MC_E_BAD_DEVICE);
  pthread_mutex_lock(&g_plans_lock);
  mc_lt_plan **pp = &g_idle[key->device];
  while (*pp && memcmp(&(*pp)->key, key, sizeof *key) != 0) pp = &(*pp)->next;
  mc_lt_plan *p = *pp;
  if (p) {
    *pp = p->next;
    p->next = NULL;
    g_nidle[key->device]--;
  }
  pthread_mutex_unlock(&g_plans_lock);
  if (p) {
    *out = p;
    return MC_OK;
  }
  return plan_make(key, handle, stream, dstream, out);
}

void mc_lt_plan_give(mc_lt_plan *p, CUstream stream) {
  if (!p) return;
  int d = p->key.device;
  if (!p->broken) {
    pthread_mutex_lock(&g_plans_lock);
    int kept = g_nidle[d] < MC_LT_IDLE_MAX;
    if (kept) {
      p->next = g_idle[d];
      g_idle[d] = p;
      g_nidle[d]++;
    }
    pthread_mutex_unlock(&g_plans_lock);
    if (kept) return;
  }
  mc_ctx_scope scope;
  if (MC_FAILED(mc_ctx_enter(d, &scope))) return; /* no context: leak rather than crash */
  plan_free(p, 4, stream);
  mc_ctx_leave(&scope);
}

void mc_lt_plans_fork_prepare(void) { pthread_mutex_lock(&g_plans_lock); }
void mc_lt_plans_fork_parent(void) { pthread_mutex_unlock(&g_plans_lock); }
void mc_lt_plans_fork_child(void) {
  /* The parent's plans belong to its handles and contexts: forget them (no library call). */
  memset(g_idle, 0, sizeof g_idle);
  memset(g_nidle, 0, sizeof g_nidle);
  pthread_mutex_unlock(&g_plans_lock);
}
