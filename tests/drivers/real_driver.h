/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* real_driver.h - for the shims that forward every entry point to the real CUDA driver
 * (countcuda.c, benchmarks/first_call_stages/timecuda.c): real_sym(name), the real driver's entry
 * point, from COUNTCUDA_REAL (default libcuda.so.1), opened once. Header-only; NAME_FOR_ERRORS is
 * the shim's name in the message printed when the driver cannot be opened. */
#ifndef MGPU_CACHED_TEST_REAL_DRIVER_H
#define MGPU_CACHED_TEST_REAL_DRIVER_H

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef NAME_FOR_ERRORS
#define NAME_FOR_ERRORS "countcuda"
#endif

static void *g_real;
static pthread_once_t g_real_once = PTHREAD_ONCE_INIT;

static void open_real(void) {
  const char *path = getenv("COUNTCUDA_REAL");
  g_real = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!g_real) fprintf(stderr, NAME_FOR_ERRORS ": %s\n", dlerror());
}

static void *real_sym(const char *name) {
  pthread_once(&g_real_once, open_real);
  return g_real ? dlsym(g_real, name) : NULL;
}

#endif
