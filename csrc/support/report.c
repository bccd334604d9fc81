/* report.c - error and debug output in the stock wrappers' style (see report.h). */
#include "support/report.h"

#include <stdarg.h>
#include <stdio.h>

#include "platform/backend.h"
#include "support/config.h"
#include "platform/context.h"
#include "platform/driver.h"
#include "support/stats.h"

static const char *own_error_name(int result) {
  switch (result) {
  case MC_E_NO_DRIVER: return "MGPU_CACHED_NO_DRIVER";
  case MC_E_NULL_ARGUMENT: return "MGPU_CACHED_NULL_ARGUMENT";
  case MC_E_UNKNOWN_HANDLE: return "MGPU_CACHED_UNKNOWN_HANDLE";
  case MC_E_STALE_HANDLE: return "MGPU_CACHED_STALE_HANDLE";
  case MC_E_DOUBLE_DESTROY: return "MGPU_CACHED_DOUBLE_DESTROY";
  case MC_E_BAD_DEVICE: return "MGPU_CACHED_INVALID_DEVICE";
  case MC_E_NO_MEMORY: return "MGPU_CACHED_OUT_OF_HOST_MEMORY";
  case MC_E_UNSUPPORTED:
    return mc_backend() == MC_BACKEND_HIP ? "MGPU_CACHED_NOT_SUPPORTED_BY_HIP"
                                          : "MGPU_CACHED_DRIVER_TOO_OLD";
  case MC_E_BAD_ARGUMENT: return "MGPU_CACHED_INVALID_ARGUMENT";
  case MC_E_BAD_IMAGE: return "MGPU_CACHED_INVALID_IMAGE";
  case MC_E_NO_LIBRARY: return "MGPU_CACHED_LIBRARY_NOT_FOUND";
  case MC_E_TOO_SMALL: return "MGPU_CACHED_RESERVED_SPACE_TOO_SMALL";
  default: return "<unknown>";
  }
}

const char *mc_result_name(int result) {
  if (result < 0) return own_error_name(result);
  const char *name = NULL;
  if (mc_driver_loaded() && mc_cu.cuGetErrorName) mc_cu.cuGetErrorName((CUresult)result, &name);
  return name ? name : "<unknown>";
}

void mc_report(const char *where, mc_status st, const char *detail) {
  static int no_driver_reported;
  if (!MC_FAILED(st)) return;
  char hip_name[128]; /* on HIP, the core's CUDA call names become the HIP calls made */
  if (mc_backend() == MC_BACKEND_HIP) st.call = mc_hip_call_name(st.call, hip_name, sizeof hip_name);
  mc_stat_add(MC_STAT_errors, 1);
  if (st.result > 0) mc_ctx_note_result(st.result); /* faults: a reset or sticky error (context.h) */
  if (st.result < 0) {
    if (st.result == MC_E_NO_DRIVER) { /* once: every later call would say the same */
      if (__atomic_exchange_n(&no_driver_reported, 1, __ATOMIC_RELAXED)) return;
      detail = mc_driver_error();
    }
    fprintf(stderr, "'%s' failed with '%s'%s%s\n", st.call ? st.call : where,
            mc_result_name(st.result), detail ? ": " : "", detail ? detail : "");
  } else {
    fprintf(stderr, "'%s' failed with '%s'\n", st.call, mc_result_name(st.result));
  }
}

void mc_report_cu(const char *expr, int result) {
  if (result == 0) return;
  mc_ctx_note_result(result); /* faults (context.h) */
  fprintf(stderr, "'%s' failed with '%s'\n", expr, mc_result_name(result));
}

static void vmessage(const char *fmt, va_list ap) {
  fputs("mgpu-cached: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
}

void mc_message(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmessage(fmt, ap);
  va_end(ap);
}

void mc_debug(const char *fmt, ...) {
  if (!mc_config()->verbose) return;
  va_list ap;
  va_start(ap, fmt);
  vmessage(fmt, ap);
  va_end(ap);
}
