/* report.h - error and debug output, in the stock wrappers' style.
 *
 * Only the ABI edge (abi_cuda.c) and the stock-behaviour path (stock.c) print. Messages read like
 * the stock CUDA wrapper's: 'cuModuleLoadData(&module, data)' failed with 'CUDA_ERROR_INVALID_IMAGE'.
 */
#ifndef MGPU_CACHED_REPORT_H
#define MGPU_CACHED_REPORT_H

#include "support/status.h"

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
