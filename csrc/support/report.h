/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* report.h - error and debug output, in the stock wrappers' style.
 *
 * Only the ABI edge (abi_cuda.c) and the stock-behaviour path (stock.c) print. Messages read like
 * the stock CUDA wrapper's: 'cuModuleLoadData(&module, data)' failed with 'CUDA_ERROR_INVALID_IMAGE'.
 */
#ifndef MGPU_CACHED_REPORT_H
#define MGPU_CACHED_REPORT_H

#include <stddef.h>

#include "support/status.h"

/* What the reports need of the platform layer above them, registered at library load by the ABI
 * edge (abi/hooks.c) so that support/ depends on nothing above it. Until it is registered (and
 * with a NULL field) the reports behave as before any driver loaded: no driver names, the CUDA
 * call names, no fault note. */
typedef struct mc_report_hooks {
  /* the loaded driver's name of a result ("CUDA_ERROR_INVALID_IMAGE"), or NULL */
  const char *(*driver_result_name)(int result);
  int (*backend_is_hip)(void); /* 1 when the HIP backend was chosen (no loading) */
  /* the HIP call that stands for a CUDA call name (backend.h: mc_hip_call_name) */
  const char *(*hip_call_name)(const char *call, char *buf, size_t size);
  void (*note_result)(int result);   /* a failed driver result, for faults (context.h) */
  const char *(*driver_error)(void); /* why the driver did not load, or NULL (driver.h) */
} mc_report_hooks;

/* Register the hooks (a static object: kept, not copied). Called once, at library load. */
void mc_report_set_hooks(const mc_report_hooks *hooks);

/* Name of a CUresult ("CUDA_ERROR_INVALID_IMAGE") or of an MC_E_* code. Never NULL. */
const char *mc_result_name(int result);

/* Print "'<call>' failed with '<name>'" for a failed status (nothing for MC_OK). `where` is the
 * mgpu* entry point; it is added for errors found by mgpu-cached itself, with `detail` if given. */
void mc_report(const char *where, mc_status st, const char *detail);

/* Print a driver result in the stock form for the stock path: "'<expr>' failed with '<name>'". */
void mc_report_cu(const char *expr, int result);

/* Print one line prefixed "mgpu-cached: " (always). */
void mc_message(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print one line prefixed "mgpu-cached: " when MGPU_CACHED_VERBOSE is set. */
void mc_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
