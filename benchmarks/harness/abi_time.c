/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* abi_time.c - host time per mgpu* entry point, for any runtime that exports them: an LD_PRELOAD
 * shim that wraps each entry point (the next definition found with dlsym(RTLD_NEXT)), times it
 * with CLOCK_MONOTONIC, and at exit writes one line per entry point called:
 *
 *   name calls total_ns
 *
 * to the file ABI_TIME_OUT names (nothing without it). Put it first in
 * LD_PRELOAD, before a preloaded runtime: LD_PRELOAD="abi_time.so lib.so". Single-threaded
 * programs only (the counters are plain). benchmarks/abi_time.py runs a program with N and 2N steps
 * under it and takes the difference: which call of an MLIR program's step holds the time one
 * runtime spends more than another (the shim's own ~50 ns per call is the same for every runtime).
 * Build: cc -O2 -shared -fPIC abi_time.c -o abi_time.so -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* X(name, V: returns nothing / P: returns a pointer, parameters, arguments) */
#define ABI_CALLS(X)                                                                             \
  X(mgpuModuleLoad, P, (void *data, size_t size), (data, size))                                \
  X(mgpuModuleUnload, V, (void *module), (module))                                             \
  X(mgpuModuleGetFunction, P, (void *module, const char *name), (module, name))               \
  X(mgpuLaunchKernel, V,                                                                        \
    (void *f, intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx, intptr_t by, intptr_t bz,    \
     int32_t smem, void *stream, void **params, void **extra, size_t nparams),                  \
    (f, gx, gy, gz, bx, by, bz, smem, stream, params, extra, nparams))                          \
  X(mgpuStreamCreate, P, (void), ())                                                            \
  X(mgpuStreamDestroy, V, (void *stream), (stream))                                             \
  X(mgpuStreamSynchronize, V, (void *stream), (stream))                                         \
  X(mgpuStreamWaitEvent, V, (void *stream, void *event), (stream, event))                       \
  X(mgpuEventCreate, P, (void), ())                                                             \
  X(mgpuEventDestroy, V, (void *event), (event))                                                \
  X(mgpuEventSynchronize, V, (void *event), (event))                                            \
  X(mgpuEventRecord, V, (void *event, void *stream), (event, stream))                           \
  X(mgpuMemAlloc, P, (uint64_t bytes, void *stream, bool host_shared),                          \
    (bytes, stream, host_shared))                                                               \
  X(mgpuMemFree, V, (void *ptr, void *stream), (ptr, stream))                                   \
  X(mgpuMemcpy, V, (void *dst, void *src, size_t bytes, void *stream),                          \
    (dst, src, bytes, stream))                                                                  \
  X(mgpuMemset32, V, (void *dst, unsigned value, size_t n, void *stream),                       \
    (dst, value, n, stream))

enum {
#define X(name, kind, params, args) I_##name,
  ABI_CALLS(X)
#undef X
  N_CALLS
};
static const char *const names[N_CALLS] = {
#define X(name, kind, params, args) #name,
    ABI_CALLS(X)
#undef X
};
static unsigned long long calls[N_CALLS], total_ns[N_CALLS];

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *next(const char *name) {
  void *p = dlsym(RTLD_NEXT, name);
  if (!p) {
    fprintf(stderr, "abi_time: no %s after this object\n", name);
    abort();
  }
  return p;
}

static void tally(int i, uint64_t t0) {
  calls[i]++;
  total_ns[i] += now_ns() - t0;
}

/* One wrapper per entry point: the next definition, timed. */
#define X(name, kind, params, args) X_##kind(name, params, args)
#define X_V(name, params, args)                                                                \
  void name params {                                                                           \
    static void(*real) params;                                                                 \
    if (!real) real = (void(*) params)next(#name);                                             \
    uint64_t t0 = now_ns();                                                                    \
    real args;                                                                                 \
    tally(I_##name, t0);                                                                       \
  }
#define X_P(name, params, args)                                                                \
  void *name params {                                                                          \
    static void *(*real) params;                                                               \
    if (!real) real = (void *(*) params)next(#name);                                           \
    uint64_t t0 = now_ns();                                                                    \
    void *r = real args;                                                                       \
    tally(I_##name, t0);                                                                       \
    return r;                                                                                  \
  }
ABI_CALLS(X)
#undef X
#undef X_V
#undef X_P

__attribute__((destructor)) static void dump(void) {
  const char *path = getenv("ABI_TIME_OUT");
  if (!path) return;
  FILE *f = fopen(path, "w");
  if (!f) return;
  for (int i = 0; i < N_CALLS; ++i)
    if (calls[i]) fprintf(f, "%s %llu %llu\n", names[i], calls[i], total_ns[i]);
  fclose(f);
}
