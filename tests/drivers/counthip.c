/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* counthip.c - a counting shim in front of the real HIP runtime, for the AMD GPU tests.
 *
 * It exports every entry point of mgpu-cached's HIP table (csrc/platform/hip_api.h), counts each call and
 * forwards it to the real runtime (COUNTHIP_REAL, default libamdhip64.so). Point
 * MGPU_CACHED_HIP_RUNTIME at it to see which HIP calls the library makes on a real GPU.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../csrc/platform/hip_api.h"

#define EXPORT __attribute__((visibility("default")))

enum {
#define IDX(name, ret, params, args, req, since) IDX_##name,
  MC_HIP_SYMBOLS(IDX)
#undef IDX
  NSYM
};
static const char *const k_names[] = {
#define NAME(name, ret, params, args, req, since) #name,
    MC_HIP_SYMBOLS(NAME)
#undef NAME
};
static long g_counts[NSYM];

static void *real_lib(void) {
  static void *lib;
  if (!lib) {
    const char *path = getenv("COUNTHIP_REAL");
    lib = dlopen(path && *path ? path : "libamdhip64.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      fprintf(stderr, "counthip: cannot load the real HIP runtime: %s\n", dlerror());
      abort();
    }
  }
  return lib;
}

#define FORWARD(name, ret, params, args, req, since)                                              \
  EXPORT ret name params {                                                                        \
    static ret(*real) params;                                                                     \
    if (!real) real = (ret(*) params)dlsym(real_lib(), #name);                                    \
    if (!real) {                                                                                  \
      fprintf(stderr, "counthip: the real HIP runtime has no %s\n", #name);                      \
      abort();                                                                                    \
    }                                                                                             \
    __atomic_fetch_add(&g_counts[IDX_##name], 1, __ATOMIC_RELAXED);                               \
    return real args;                                                                             \
  }
MC_HIP_SYMBOLS(FORWARD)
#undef FORWARD

EXPORT long counthip_count(const char *name) {
  for (int i = 0; i < NSYM; ++i)
    if (strcmp(k_names[i], name) == 0) return __atomic_load_n(&g_counts[i], __ATOMIC_RELAXED);
  return -1;
}
EXPORT void counthip_reset(void) {
  for (int i = 0; i < NSYM; ++i) __atomic_store_n(&g_counts[i], 0, __ATOMIC_RELAXED);
}
