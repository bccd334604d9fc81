/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* report.c - error and debug output in the stock wrappers' style (see report.h). */
#include "support/report.h"

#include <stdarg.h>
#include <stdio.h>

#include "support/config.h"
#include "support/stats.h"

static const mc_report_hooks *g_hooks; /* written once at library load (abi/hooks.c) */
static const mc_report_hooks k_unhooked; /* until then: as before any driver loaded */

void mc_report_set_hooks(const mc_report_hooks *h) {
  __atomic_store_n(&g_hooks, h, __ATOMIC_RELEASE);
}

static const mc_report_hooks *hooks(void) {
  const mc_report_hooks *h = __atomic_load_n(&g_hooks, __ATOMIC_ACQUIRE);
  return h ? h : &k_unhooked;
}

static void note_result(int result) {
  if (hooks()->note_result) hooks()->note_result(result);
}

static int backend_is_hip(void) { return hooks()->backend_is_hip && hooks()->backend_is_hip(); }

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
    return backend_is_hip() ? "MGPU_CACHED_NOT_SUPPORTED_BY_HIP" : "MGPU_CACHED_DRIVER_TOO_OLD";
  case MC_E_BAD_ARGUMENT: return "MGPU_CACHED_INVALID_ARGUMENT";
  case MC_E_BAD_IMAGE: return "MGPU_CACHED_INVALID_IMAGE";
  case MC_E_NO_LIBRARY: return "MGPU_CACHED_LIBRARY_NOT_FOUND";
  case MC_E_TOO_SMALL: return "MGPU_CACHED_RESERVED_SPACE_TOO_SMALL";
  default: return "<unknown>";
  }
}

const char *mc_result_name(int result) {
  if (result < 0) return own_error_name(result);
  const char *name = hooks()->driver_result_name ? hooks()->driver_result_name(result) : NULL;
  return name ? name : "<unknown>";
}

void mc_report(const char *where, mc_status st, const char *detail) {
  static int no_driver_reported;
  if (!MC_FAILED(st)) return;
  char hip_name[128]; /* on HIP, the core's CUDA call names become the HIP calls made */
  if (hooks()->hip_call_name && backend_is_hip())
    st.call = hooks()->hip_call_name(st.call, hip_name, sizeof hip_name);
  mc_stat_add(MC_STAT_errors, 1);
  if (st.result > 0) note_result(st.result); /* faults: a reset or sticky error (context.h) */
  if (st.result < 0) {
    if (st.result == MC_E_NO_DRIVER) { /* once: every later call would say the same */
      if (__atomic_exchange_n(&no_driver_reported, 1, __ATOMIC_RELAXED)) return;
      detail = hooks()->driver_error ? hooks()->driver_error() : NULL;
    }
    fprintf(stderr, "'%s' failed with '%s'%s%s\n", st.call ? st.call : where,
            mc_result_name(st.result), detail ? ": " : "", detail ? detail : "");
  } else {
    fprintf(stderr, "'%s' failed with '%s'\n", st.call, mc_result_name(st.result));
  }
}

void mc_report_cu(const char *expr, int result) {
  if (result == 0) return;
  note_result(result); /* faults (context.h) */
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
