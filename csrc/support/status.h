/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* status.h - the status every internal function returns; only the ABI edge reports it.
 *
 * A status names the call that failed (a driver entry point such as "cuLibraryLoadData", or the
 * mgpu* function for errors found by mgpu-cached itself) and its result: a CUresult from the driver
 * (> 0), or one of the MC_E_* codes below (< 0). MC_OK is the zero status.
 */
#ifndef MGPU_CACHED_STATUS_H
#define MGPU_CACHED_STATUS_H

typedef struct mc_status {
  const char *call; /* static string: what failed; NULL when ok */
  int result;       /* CUresult (> 0) or MC_E_* (< 0); 0 when ok */
} mc_status;

enum {
  MC_E_NO_DRIVER = -1,      /* the CUDA driver library could not be loaded */
  MC_E_NULL_ARGUMENT = -2,  /* a required pointer argument is null */
  MC_E_UNKNOWN_HANDLE = -3, /* a module or function handle mgpu-cached did not make */
  MC_E_STALE_HANDLE = -4,   /* a handle that was already released or unloaded */
  MC_E_DOUBLE_DESTROY = -5, /* a stream or event destroyed twice */
  MC_E_BAD_DEVICE = -6,     /* the default device is not a valid ordinal */
  MC_E_NO_MEMORY = -7,      /* host memory allocation failed */
  MC_E_UNSUPPORTED = -8,    /* the loaded driver lacks an entry point this call needs */
  MC_E_BAD_ARGUMENT = -9,   /* an argument outside what the call accepts */
  MC_E_BAD_IMAGE = -10,     /* a blob whose header puts its tables or its end outside memory */
  MC_E_NO_LIBRARY = -11,    /* an optional library (cuSPARSE, cuSPARSELt) could not be loaded */
  MC_E_TOO_SMALL = -12,     /* the loaded library's structs do not fit what the caller reserved */
};

#define MC_OK ((mc_status){0, 0})
#define MC_FAIL(callname, res) ((mc_status){(callname), (res)})
#define MC_FAILED(st) ((st).result != 0)

/* Evaluate a driver call; on failure return a status naming it. */
#define MC_CU_TRY(callname, expr)                                                                 \
  do {                                                                                            \
    CUresult mc_try_res_ = (expr);                                                                \
    if (mc_try_res_ != 0) return MC_FAIL(callname, (int)mc_try_res_);                             \
  } while (0)

#endif
