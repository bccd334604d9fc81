/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* fake_counts.h - for the test programs that run MLIR objects (mlir_harness.c,
 * modstate/counter_main.c): with HARNESS_FAKE_COUNTS=name,name,... and the recording fake driver
 * (MGPU_CACHED_CUDA_DRIVER), print "count NAME N" for each driver entry point named. */
#ifndef MGPU_CACHED_TEST_FAKE_COUNTS_H
#define MGPU_CACHED_TEST_FAKE_COUNTS_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void report_fake_counts(void) {
  const char *names = getenv("HARNESS_FAKE_COUNTS");
  const char *drv = getenv("MGPU_CACHED_CUDA_DRIVER");
  if (!names || !drv) return;
  void *h = dlopen(drv, RTLD_NOW | RTLD_NOLOAD);
  long (*count)(const char *) = h ? (long (*)(const char *))dlsym(h, "fake_count") : NULL;
  if (!count) return;
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", names);
  for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) printf("count %s %ld\n", t, count(t));
}

#endif
