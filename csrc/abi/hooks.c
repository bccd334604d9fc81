/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* hooks.c - wires, at library load, what the support layer needs of the layers above it, so that
 * support/ calls nothing above it (csrc/LAYERS): the reports' driver and backend names and their
 * fault note (report.h: mc_report_hooks), the statistics' backend name (stats.h). No state of its
 * own. (faults.c wires the caches' reset hooks, fork.c the fork handlers; the trace registers its
 * own statistics observer.) */
#include "platform/backend.h"
#include "platform/context.h"
#include "platform/driver.h"
#include "support/report.h"
#include "support/stats.h"

/* The loaded driver's name of a result ("CUDA_ERROR_INVALID_IMAGE"), or NULL. */
static const char *driver_result_name(int result) {
  const char *name = NULL;
  if (mc_driver_loaded() && mc_cu.cuGetErrorName) mc_cu.cuGetErrorName((CUresult)result, &name);
  return name;
}

static int backend_now_hip(void) { return mc_backend() == MC_BACKEND_HIP; }

static const mc_report_hooks k_report_hooks = {
    .driver_result_name = driver_result_name,
    .backend_is_hip = backend_now_hip,
    .hip_call_name = mc_hip_call_name,
    .note_result = mc_ctx_note_result,
    .driver_error = mc_driver_error,
};

__attribute__((constructor)) static void mc_hooks_register(void) {
  mc_report_set_hooks(&k_report_hooks);
  mc_stats_set_backend_name(mc_backend_name);
}
