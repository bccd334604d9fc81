/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* alloc_bench.c - mgpuMemAlloc/mgpuMemFree cost, caching allocator vs stock calls, side by side.
 *
 * Usage: alloc_bench LIB_CACHED LIB_ZERO0 LIB_ORDERED LIB_BATCH LIB_ALLOC0 LIB_STOCK FATBIN [rounds]
 *   Six copies of libmgpu_cached.so (each copy is its own instance), configured before first
 *   use as: default (caching allocator on: reused blocks cleared, reuse after the reclaimer's
 *   device-wide wait), MGPU_CACHED_ALLOCATOR_ZERO=0, MGPU_CACHED_ALLOCATOR_ORDERED=1,
 *   MGPU_CACHED_ALLOCATOR_RECLAIM_US=0, MGPU_CACHED_ALLOCATOR=0, MGPU_CACHED_DISABLE=1.
 *   Every copy's cache is released before each pattern, so patterns do not inherit each other's
 *   blocks. Below each line: the allocator's misses and device-wide waits per unit for the four
 *   caching configurations.
 *   FATBIN: tests/data/alloc_kernels.fatbin (kernel axpy).
 * Modes are interleaved round by round; each line reports the median over rounds of the mean
 * time of one unit (µs), and ratios. Built and run by benchmarks/alloc_bench.py.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct lib {
  const char *name;
  int (*enabled)(void);
  void *(*alloc)(uint64_t, void *, _Bool);
  void (*free)(void *, void *);
  void *(*stream_create)(void);
  void (*stream_sync)(void *);
  void *(*load)(void *, size_t);
  void *(*get_function)(void *, const char *);
  void (*launch)(void *, intptr_t, intptr_t, intptr_t, intptr_t, intptr_t, intptr_t, int32_t,
                 void *, void **, void **, size_t);
  void (*memset32)(void *, unsigned, size_t, void *);
  uint64_t (*release)(void);
  int (*stats_count)(void);
  const char *(*stats_name)(int);
  int (*stats_read)(uint64_t *, int);
  void *s1, *s2, *axpy;
} lib;

static void *sym(void *h, const char *n) {
  void *p = dlsym(h, n);
  if (!p) {
    fprintf(stderr, "missing %s\n", n);
    exit(1);
  }
  return p;
}

static const char *const k_envs[] = {"MGPU_CACHED_ALLOCATOR", "MGPU_CACHED_DISABLE",
                                     "MGPU_CACHED_ALLOCATOR_ZERO", "MGPU_CACHED_ALLOCATOR_ORDERED",
                                     "MGPU_CACHED_ALLOCATOR_RECLAIM_US"};

static void open_lib(lib *L, const char *path, const char *name, const char *env, const char *val,
                     void *blob, size_t blob_size) {
  for (size_t i = 0; i < sizeof k_envs / sizeof *k_envs; ++i) unsetenv(k_envs[i]);
  if (env) setenv(env, val, 1);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "%s\n", dlerror());
    exit(1);
  }
  L->name = name;
  L->enabled = sym(h, "mgpu_cached_enabled");
  L->alloc = sym(h, "mgpuMemAlloc");
  L->free = sym(h, "mgpuMemFree");
  L->stream_create = sym(h, "mgpuStreamCreate");
  L->stream_sync = sym(h, "mgpuStreamSynchronize");
  L->load = sym(h, "mgpuModuleLoad");
  L->get_function = sym(h, "mgpuModuleGetFunction");
  L->launch = sym(h, "mgpuLaunchKernel");
  L->memset32 = sym(h, "mgpuMemset32");
  L->release = sym(h, "mgpu_cached_allocator_release");
  L->stats_count = sym(h, "mgpu_cached_stats_count");
  L->stats_name = sym(h, "mgpu_cached_stats_name");
  L->stats_read = sym(h, "mgpu_cached_stats_read");
  L->enabled(); /* reads the environment now */
  L->s1 = L->stream_create();
  L->s2 = L->stream_create();
  L->axpy = L->get_function(L->load(blob, blob_size), "axpy");
  if (env) unsetenv(env);
}

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void axpy(lib *L, float a, void *x, void *y, int n, void *s) {
  void *args[4] = {&a, &x, &y, &n};
  L->launch(L->axpy, 132, 1, 1, 256, 1, 1, 0, s, args, NULL, 4);
}

/* Patterns; each returns the time of `iters` units in µs. */
enum { P_DEV_STREAM, P_DEV_NULL, P_SHARED_FREE_STREAM, P_SHARED_NULL, P_SHARED_TOUCH, P_STEP,
       P_STEP_ONCE };
static const char *const k_pattern[] = {
    "device: alloc(s) + free(s)", "device: alloc + free(NULL)", "host_shared: alloc + free(s)",
    "host_shared: alloc + free(NULL)",
    "host_shared: alloc + kernel + sync + free(s)", "step: 3 host_shared allocs, 3 kernels, 2 streams",
    "step, buffers made once"};

/* The step's work: two producers on two streams, joined, a third kernel, a host read. */
static void step_kernels(lib *L, void *x, void *y, void *z, int n) {
  axpy(L, 2.0f, x, y, n, L->s1);
  axpy(L, 3.0f, x, z, n, L->s2);
  L->stream_sync(L->s1);
  L->stream_sync(L->s2);
  axpy(L, 1.0f, y, z, n, L->s1);
  L->stream_sync(L->s1);
  volatile float v = ((float *)z)[0];
  (void)v;
}

static double run(lib *L, int pattern, uint64_t bytes, int iters) {
  int n = (int)(bytes / 4);
  double t0 = now_us();
  if (pattern == P_STEP_ONCE) {
    void *x = L->alloc(bytes, NULL, 1), *y = L->alloc(bytes, NULL, 1), *z = L->alloc(bytes, NULL, 1);
    t0 = now_us();
    for (int i = 0; i < iters; ++i) step_kernels(L, x, y, z, n);
    double t = now_us() - t0;
    L->free(x, L->s1), L->free(y, L->s1), L->free(z, L->s1);
    L->stream_sync(L->s1);
    return t;
  }
  for (int i = 0; i < iters; ++i) {
    switch (pattern) {
    case P_DEV_STREAM: {
      void *p = L->alloc(bytes, L->s1, 0);
      L->free(p, L->s1);
      break;
    }
    case P_DEV_NULL: {
      void *p = L->alloc(bytes, NULL, 0);
      L->free(p, NULL);
      break;
    }
    case P_SHARED_FREE_STREAM: {
      void *p = L->alloc(bytes, NULL, 1);
      L->free(p, L->s1);
      break;
    }
    case P_SHARED_NULL: {
      void *p = L->alloc(bytes, NULL, 1);
      L->free(p, NULL);
      break;
    }
    case P_SHARED_TOUCH: {
      void *p = L->alloc(bytes, NULL, 1);
      L->memset32(p, 0, (size_t)n, L->s1);
      axpy(L, 1.0f, p, p, n, L->s1);
      L->stream_sync(L->s1);
      L->free(p, L->s1);
      break;
    }
    case P_STEP: {
      void *x = L->alloc(bytes, NULL, 1), *y = L->alloc(bytes, NULL, 1);
      void *z = L->alloc(bytes, NULL, 1);
      step_kernels(L, x, y, z, n);
      L->free(x, L->s1), L->free(y, L->s1), L->free(z, L->s1);
      break;
    }
    }
  }
  L->stream_sync(L->s1);
  return now_us() - t0;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

enum { M_CACHED, M_ZERO0, M_ORDERED, M_BATCH, M_ALLOC0, M_STOCK, M_LIBS, M_ONCE = M_LIBS };

/* A counter of a library copy by name (0 if unknown). */
static uint64_t counter(lib *L, const char *name) {
  uint64_t v[128];
  int n = L->stats_read(v, 128);
  for (int i = 0; i < n; ++i)
    if (strcmp(L->stats_name(i), name) == 0) return v[i];
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 8) {
    fprintf(stderr,
            "usage: %s LIB_CACHED LIB_ZERO0 LIB_ORDERED LIB_BATCH LIB_ALLOC0 LIB_STOCK FATBIN [rounds]\n",
            argv[0]);
    return 2;
  }
  int rounds = argc > 8 ? atoi(argv[8]) : 7;
  if (rounds > 64) rounds = 64;
  FILE *f = fopen(argv[7], "rb");
  if (!f) return perror(argv[7]), 1;
  static char blob[1 << 20];
  size_t blob_size = fread(blob, 1, sizeof blob, f);
  fclose(f);
  lib L[M_LIBS];
  open_lib(&L[M_CACHED], argv[1], "cached", NULL, NULL, blob, blob_size);
  open_lib(&L[M_ZERO0], argv[2], "ZERO=0", "MGPU_CACHED_ALLOCATOR_ZERO", "0", blob, blob_size);
  open_lib(&L[M_ORDERED], argv[3], "ORDERED=1", "MGPU_CACHED_ALLOCATOR_ORDERED", "1", blob,
           blob_size);
  open_lib(&L[M_BATCH], argv[4], "RECLAIM_US=0", "MGPU_CACHED_ALLOCATOR_RECLAIM_US", "0", blob,
           blob_size);
  open_lib(&L[M_ALLOC0], argv[5], "ALLOCATOR=0", "MGPU_CACHED_ALLOCATOR", "0", blob, blob_size);
  open_lib(&L[M_STOCK], argv[6], "stock", "MGPU_CACHED_DISABLE", "1", blob, blob_size);
  for (int m = 0; m < M_LIBS; ++m)
    if (L[m].enabled() != (m != M_STOCK)) {
      fprintf(stderr, "configuration not as expected\n");
      return 1;
    }
  static const uint64_t sizes[] = {256, 4096, 65536, 1 << 20, 16 << 20, 64 << 20};
  printf("us per unit (median of %d rounds, modes interleaved); ratio = mode / cached\n", rounds);
  printf("%-46s %9s %8s %8s %9s %8s %11s %8s %8s %8s %8s\n", "pattern", "bytes", "cached", "ZERO=0",
         "ORDERED=1", "RCL=0", "ALLOCATOR=0", "stock", "Z0/c", "A0/c", "stock/c");
  for (int pat = P_DEV_STREAM; pat <= P_STEP; ++pat) {
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; ++si) {
      uint64_t bytes = sizes[si];
      if (pat == P_STEP && bytes != (1 << 20)) continue;
      if (pat == P_SHARED_TOUCH && (bytes < 65536 || bytes > (16 << 20))) continue;
      int iters = bytes >= (16 << 20) ? 50 : pat >= P_SHARED_TOUCH ? 100 : 400;
      double t[M_LIBS + 1][64];
      int modes = pat == P_STEP ? M_LIBS + 1 : M_LIBS;
      for (int m = 0; m < M_LIBS; ++m) L[m].release();
      for (int m = 0; m < modes; ++m)
        run(&L[m == M_ONCE ? M_CACHED : m], m == M_ONCE ? P_STEP_ONCE : pat, bytes, 5);
      uint64_t miss0[M_ALLOC0], wait0[M_ALLOC0];
      for (int m = 0; m < M_ALLOC0; ++m) {
        miss0[m] = counter(&L[m], "alloc_misses");
        wait0[m] = counter(&L[m], "alloc_reclaims");
      }
      for (int r = 0; r < rounds; ++r)
        for (int m = 0; m < modes; ++m)
          t[m][r] = run(&L[m == M_ONCE ? M_CACHED : m], m == M_ONCE ? P_STEP_ONCE : pat, bytes,
                        iters) / iters;
      double med[M_LIBS + 1];
      for (int m = 0; m < modes; ++m) med[m] = median(t[m], rounds);
      printf("%-46s %9llu %8.2f %8.2f %9.2f %8.2f %11.2f %8.2f %8.2f %8.2f %8.2f\n", k_pattern[pat],
             (unsigned long long)bytes, med[M_CACHED], med[M_ZERO0], med[M_ORDERED], med[M_BATCH],
             med[M_ALLOC0], med[M_STOCK], med[M_ZERO0] / med[M_CACHED],
             med[M_ALLOC0] / med[M_CACHED], med[M_STOCK] / med[M_CACHED]);
      printf("%-46s %9s", "   misses / device-wide waits per unit", "");
      for (int m = 0; m < M_ALLOC0; ++m)
        printf(" %.2f/%.2f", (double)(counter(&L[m], "alloc_misses") - miss0[m]) / (rounds * iters),
               (double)(counter(&L[m], "alloc_reclaims") - wait0[m]) / (rounds * iters));
      printf("\n");
      if (pat == P_STEP)
        printf("%-46s %9llu %8.2f   (made once: cached %.3fx, ZERO=0 %.3fx, ORDERED=1 %.3fx, "
               "RECLAIM_US=0 %.3fx, stock %.3fx)\n",
               k_pattern[P_STEP_ONCE], (unsigned long long)bytes, med[M_ONCE],
               med[M_CACHED] / med[M_ONCE], med[M_ZERO0] / med[M_ONCE],
               med[M_ORDERED] / med[M_ONCE], med[M_BATCH] / med[M_ONCE],
               med[M_STOCK] / med[M_ONCE]);
      fflush(stdout);
    }
  }
  uint64_t n = L[M_CACHED].release();
  printf("cached blocks released at the end: %llu\n", (unsigned long long)n);
  return 0;
}
