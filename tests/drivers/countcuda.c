/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* countcuda.c - a counting CUDA driver for the GPU tests: exports every entry point of
 * mgpu-cached's symbol table, counts each call and forwards it to the real driver
 * (COUNTCUDA_REAL, default libcuda.so.1). Point MGPU_CACHED_CUDA_DRIVER at it.
 * Generated from csrc/platform/cuda_api.h, so it always matches what the library resolves. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_api.h"
#include "real_driver.h"
#include "symbol_index.h"

#define EXPORT __attribute__((visibility("default")))

static long g_counts[NSYM];

#define FWD(field, name, ret, params, args, req)                                                  \
  EXPORT ret name params {                                                                        \
    static ret(*fn) params;                                                                       \
    __atomic_fetch_add(&g_counts[IDX_##field], 1, __ATOMIC_RELAXED);                              \
    if (!fn) fn = (ret(*) params)real_sym(#name);                                                 \
    if (!fn) return (ret)999; /* CUDA_ERROR_UNKNOWN */                                            \
    return fn args;                                                                               \
  }
MC_CUDA_SYMBOLS(FWD)
#undef FWD

/* Calls of `field` (the table's field name, e.g. "cuStreamCreate") since the last reset. */
EXPORT long countcuda_count(const char *field) {
  for (int i = 0; i < NSYM; ++i)
    if (strcmp(k_fields[i], field) == 0) return __atomic_load_n(&g_counts[i], __ATOMIC_RELAXED);
  return -1;
}

EXPORT void countcuda_reset(void) {
  for (int i = 0; i < NSYM; ++i) __atomic_store_n(&g_counts[i], 0, __ATOMIC_RELAXED);
}
