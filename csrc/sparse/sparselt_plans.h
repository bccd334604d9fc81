/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* sparselt_plans.h - kept cuSPARSELt matmul plans (cached mode): a 2:4 SpMM's plan is made once
 * for its parameters and handed out again to a later SpMM with the same parameters, instead of
 * being made in every mgpuCuSparseLtSpMMBufferSize and destroyed in every mgpuCuSparseLtSpMM as
 * upstream does (MLIR's 2:4 lowering calls both once per execution of the generated code).
 *
 * Why equal keys give the same plan (no heuristic): a plan is made from (handle, matmul
 * descriptor, algorithm selection); the matmul descriptor from (handle, op A, op B, the matrix
 * descriptors of A, B and C = D, compute type); the algorithm selection from (handle, matmul
 * descriptor, ALG_DEFAULT) and its config id 0; each matrix descriptor from (handle, rows, cols,
 * ld = cols, alignment 16, data type, row order, and for A 50% sparsity). No data pointer enters
 * any of them. The key below - the device (cached mode has one handle per device, kept for the
 * process), both ops, the compute type, and rows, cols and data type of A, B and C - is therefore
 * every argument of every call that makes a plan; the constants are the same for all. Making a
 * plan once and using it for many matmuls is cuSPARSELt's documented use.
 *
 * A kept plan owns everything it was made from: its own three matrix descriptors (the program's
 * are destroyed after each call, and a matmul descriptor may refer to them), its matmul
 * descriptor, algorithm selection and plan, and a 4-byte device flag for the prune check, zero
 * whenever the plan is idle (cuSPARSELt writes it only when a matrix is not 2:4; a nonzero flag is
 * zeroed, and the zeroing waited for, before the plan goes back).
 *
 * Exclusive use, never shared: a plan is taken by one 2:4 matrix (its BufferSize) and given back
 * when that matrix is destroyed; idle plans wait in a list per device, at most MC_LT_IDLE_MAX per
 * device (a plan given back to a full list is destroyed). A plan whose making or use failed part
 * way is marked broken and destroyed when given back.
 *
 * Locking: g_plans_lock guards the idle lists and their counts only; no library or driver call is
 * made with it held.
 */
#ifndef MGPU_CACHED_SPARSELT_PLANS_H
#define MGPU_CACHED_SPARSELT_PLANS_H

#include <stdint.h>

#include "platform/cuda_api.h"
#include "support/status.h"

#define MC_LT_IDLE_MAX 16 /* idle plans kept per device */

/* Every argument of the calls that make a plan that differs between plans. */
typedef struct mc_lt_key {
  int32_t device;                  /* the device; its cuSPARSELt handle is the one made for it */
  int32_t op_a, op_b, compute;     /* matmul descriptor: ops and the loaded version's compute type */
  int64_t a_rows, a_cols;          /* A: structured 2:4 */
  int64_t b_rows, b_cols;          /* B: dense */
  int64_t c_rows, c_cols;          /* C = D: dense */
  int32_t a_type, b_type, c_type;  /* data types */
  int32_t pad_;                    /* zero (keys are compared with memcmp) */
} mc_lt_key;

typedef struct mc_lt_plan {
  mc_lt_key key;       /* immutable after making */
  unsigned char *mem;  /* owned: 6 structs of S bytes, 16-aligned: A, B, C, matmul, alg, plan */
  void *flag;          /* owned: 4 bytes of device memory (mc_mem_alloc), zero while idle */
  int broken;          /* 1: destroy when given back (set by the one user) */
  struct mc_lt_plan *next; /* idle list link; under g_plans_lock */
} mc_lt_plan;

/* The structs inside a kept plan (S = mc_splt_struct_bytes()). */
#define MC_LT_PLAN_A(p, S) ((p)->mem)
#define MC_LT_PLAN_B(p, S) ((p)->mem + (S))
#define MC_LT_PLAN_C(p, S) ((p)->mem + 2 * (S))
#define MC_LT_PLAN_MATMUL(p, S) ((p)->mem + 3 * (S))
#define MC_LT_PLAN_ALG(p, S) ((p)->mem + 4 * (S))
#define MC_LT_PLAN_PLAN(p, S) ((p)->mem + 5 * (S))

/* Take an idle plan with this key, or make one with `handle` (the key's device's handle) in the
 * key's device context, which the caller has made current; `stream` (the caller's handle) and
 * `dstream` (its driver stream) order the flag's zeroing. On failure nothing is kept. */
mc_status mc_lt_plan_take(const mc_lt_key *key, void *handle, CUstream stream, CUstream dstream,
                          mc_lt_plan **out);

/* Give a plan back (idle, or destroyed when broken or when the device's list is full; `stream`
 * orders the flag's free then). */
void mc_lt_plan_give(mc_lt_plan *p, CUstream stream);

/* fork(): the child forgets the parent's plans (no library call). */
void mc_lt_plans_fork_prepare(void);
void mc_lt_plans_fork_parent(void);
void mc_lt_plans_fork_child(void);

#endif
