/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* timecuda.c - a timing CUDA driver shim for first_call_stages (issue 21 item 5): exports every
 * entry point of mgpu-cached's symbol table, forwards each call to the real driver
 * (COUNTCUDA_REAL, default libcuda.so.1; every entry point looked up when the shim is loaded)
 * and counts its calls and the time spent in it. Point
 * MGPU_CACHED_CUDA_DRIVER at it; timecuda_dump(tag) prints the calls since the last dump, with
 * µs spent in the driver, to stderr and starts over. Built like tests/drivers/countcuda.c
 * (tests/drivers/real_driver.h). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_api.h"
#define NAME_FOR_ERRORS "timecuda"
#include "real_driver.h"
#include "symbol_index.h"

#define EXPORT __attribute__((visibility("default")))

static long g_counts[NSYM];
static double g_us[NSYM];

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}
/* The real entry points, looked up when the shim is loaded (its constructor, below), so a
 * first call through it does not pay for a dlsym inside the time it counts as the library's. */
#define PTR(field, name, ret, params, args, req) static ret(*g_real_##field) params;
MC_CUDA_SYMBOLS(PTR)
#undef PTR

__attribute__((constructor)) static void resolve_all(void) {
#define RESOLVE(field, name, ret, params, args, req) \
  g_real_##field = (ret(*) params)real_sym(#name);
  MC_CUDA_SYMBOLS(RESOLVE)
#undef RESOLVE
}

#define FWD(field, name, ret, params, args, req)                                                  \
  EXPORT ret name params {                                                                        \
    ret(*fn) params = g_real_##field;                                                             \
    if (!fn) return (ret)999; /* CUDA_ERROR_UNKNOWN */                                            \
    double t0 = now_us();                                                                         \
    ret r = fn args;                                                                              \
    g_us[IDX_##field] += now_us() - t0;                                                           \
    g_counts[IDX_##field]++;                                                                      \
    return r;                                                                                     \
  }
MC_CUDA_SYMBOLS(FWD)
#undef FWD

/* µs spent in the driver since the last dump. */
EXPORT double timecuda_us(void) {
  double all = 0;
  for (int i = 0; i < NSYM; ++i) all += g_us[i];
  return all;
}

/* Prints "TAG: driver=<µs in all calls> name=count/µs ..." and starts over. */
EXPORT void timecuda_dump(const char *tag) {
  double all = 0;
  for (int i = 0; i < NSYM; ++i) all += g_us[i];
  fprintf(stderr, "%s: driver=%.1f", tag, all);
  for (int i = 0; i < NSYM; ++i)
    if (g_counts[i]) fprintf(stderr, " %s=%ld/%.1f", k_fields[i], g_counts[i], g_us[i]);
  fprintf(stderr, "\n");
  memset(g_counts, 0, sizeof g_counts);
  memset(g_us, 0, sizeof g_us);
}
