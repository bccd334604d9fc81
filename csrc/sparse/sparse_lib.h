/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* sparse_lib.h - cuSPARSE and cuSPARSELt, loaded at run time (never linked).
 *
 * Each library is looked for, once, on first use, where users have it (first hit wins):
 *   1. MGPU_CACHED_CUSPARSE / MGPU_CACHED_CUSPARSELT: a path (a missing file is an error, no search);
 *   2. the dynamic loader's own search (LD_LIBRARY_PATH, ldconfig: a system CUDA toolkit):
 *      libcusparse.so.12, .so.11, .so / libcusparseLt.so.0, .so;
 *   3. the CUDA toolkit named by CUDA_HOME, CUDA_PATH, else /usr/local/cuda: lib64/, lib/,
 *      targets/<arch>-linux/lib/;
 *   4. the NVIDIA Python wheels beside this library (it lives in site-packages/mgpu_cached/lib when
 *      installed by pip): site-packages/nvidia/{cu13,cu12,cusparse}/lib (nvidia-cusparse,
 *      nvidia-cusparse-cu12) and nvidia/cusparselt/lib (nvidia-cusparselt-cu12/-cu13), then the same
 *      folders in the system's and the user's python3 site- and dist-packages.
 * A failed search keeps its reason (every place tried) for the one clear message the ABI edge
 * prints. The tables mc_sp / mc_splt are written once under a pthread_once and read-only after.
 */
#ifndef MGPU_CACHED_SPARSE_LIB_H
#define MGPU_CACHED_SPARSE_LIB_H

#include "sparse/sparse_api.h"
#include "support/status.h"

#define MC_SP_FIELD(field, name, ret, params, args, required) ret(*field) params;
typedef struct mc_cusparse_fns {
  MC_CUSPARSE_SYMBOLS(MC_SP_FIELD)
} mc_cusparse_fns;
typedef struct mc_cusparselt_fns {
  MC_CUSPARSELT_SYMBOLS(MC_SP_FIELD)
} mc_cusparselt_fns;
#undef MC_SP_FIELD

extern mc_cusparse_fns mc_sp;     /* valid after mc_cusparse_load() returned MC_OK */
extern mc_cusparselt_fns mc_splt; /* valid after mc_cusparselt_load() returned MC_OK */

/* A cuSPARSE / cuSPARSELt status in an mc_status: result = MC_SPARSE_STATUS_BASE + status, so it
 * never collides with a CUresult; call names the library call. */
#define MC_SPARSE_STATUS_BASE 0x100000
#define MC_SP_FAIL(callname, s) MC_FAIL(callname, MC_SPARSE_STATUS_BASE + (int)(s))
#define MC_IS_SPARSE_STATUS(st) ((st).result >= MC_SPARSE_STATUS_BASE)
/* Evaluate a library call; on a nonzero status return it as MC_SP_FAIL(callname, status). */
#define SP_TRY(callname, expr)                                                                   \
  do {                                                                                           \
    cusparseStatus_t sp_try_ = (expr);                                                           \
    if (sp_try_ != 0) return MC_SP_FAIL(callname, sp_try_);                                      \
  } while (0)

/* Load once. MC_OK, or MC_E_NO_LIBRARY with the reason in mc_cusparse_error(). */
mc_status mc_cusparse_load(void);
mc_status mc_cusparselt_load(void);
const char *mc_cusparse_error(void);
const char *mc_cusparselt_error(void);

/* cuSPARSELt's version as major*1000 + minor*100 + patch (0.8.1 -> 801), after a successful load. */
int mc_cusparselt_version(void);

/* Bytes of each of cuSPARSELt's opaque structs (handle, matrix, matmul and algorithm descriptors,
 * plan) in the loaded version: 11024 up to 0.5, 512 from 0.6 (cusparseLt.h), or
 * MGPU_CACHED_CUSPARSELT_STRUCT_BYTES when set (for versions newer than this table). */
size_t mc_splt_struct_bytes(void);

/* The compute type the loaded cuSPARSELt wants for the code MLIR's lowering passes: the lowering
 * passes cuSPARSELt 0.5's numbering (0 = 16F, 1 = 32I); 0.6 reordered the enumeration
 * (0 = 32I, 1 = 16F, 2 = 32F). */
int mc_splt_compute_type(int lowering_code);

/* The name of a cuSPARSE status (cusparseGetErrorString when loaded). Never NULL. */
const char *mc_sparse_status_name(int status);

#endif
