/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* driver.h - the CUDA driver, loaded at run time through one symbol table.
 *
 * Or the HIP runtime behind the same table (backend.h says how the backend is chosen).
 * mc_driver_load() dlopens MGPU_CACHED_CUDA_DRIVER (default libcuda.so.1) once and resolves every
 * entry of MC_CUDA_SYMBOLS into mc_cu. Nothing links against libcuda, so the library builds, imports
 * and reports clearly on machines without a GPU. mc_cu is written once under a pthread_once and is
 * read-only afterwards: callers need no lock.
 */
#ifndef MGPU_CACHED_DRIVER_H
#define MGPU_CACHED_DRIVER_H

#include "platform/cuda_api.h"
#include "platform/cuda_api_extra.h"
#include "support/status.h"

#define MC_DRIVER_FIELD(field, name, ret, params, args, required) ret(*field) params;
typedef struct mc_cuda_fns {
  MC_CUDA_SYMBOLS(MC_DRIVER_FIELD)
} mc_cuda_fns;
#undef MC_DRIVER_FIELD

extern mc_cuda_fns mc_cu; /* entry points; optional ones may be NULL */

#define MC_DRIVER_FIELD(field, name, ret, params, args, required) ret(*field) params;
typedef struct mc_cuda_extra_fns {
  MC_CUDA_EXTRA_SYMBOLS(MC_DRIVER_FIELD)
} mc_cuda_extra_fns;
#undef MC_DRIVER_FIELD

extern mc_cuda_extra_fns mc_cu_extra; /* for the ROCm-only exports; all optional (cuda_api_extra.h) */

/* Load the driver once. MC_OK or MC_E_NO_DRIVER (see mc_driver_error()). */
mc_status mc_driver_load(void);

/* True once the driver has been loaded successfully. */
int mc_driver_loaded(void);

/* Why loading failed (dlerror text or the missing symbol), or NULL. */
const char *mc_driver_error(void);

/* The path of the library that was (or would be) loaded for the chosen backend. */
const char *mc_driver_path(void);

#endif
