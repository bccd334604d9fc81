/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* alloc_pair_bench.c - the synchronous pair (issue 21 item 3): mgpuMemAlloc(bytes, NULL) +
 * mgpuMemFree(p, NULL), as MLIR's synchronous gpu.alloc / gpu.dealloc lower, device and
 * host_shared, 256 B to 64 MiB, in several copies of the library side by side; then the same
 * pairs "touched": an mgpuMemset32 of the whole block between the two, on a stream of the copy's
 * own (made once; the stock wrapper has no context for the NULL stream there), which the
 * free(NULL) waits for (a program uses what it allocates; the memset is the same in every copy).
 *
 * Usage: alloc_pair_bench ROUNDS NAME=LIB[:VAR=VAL] ...
 *   Each copy is its own instance (its own path), configured before its first use with the one
 *   variable given (e.g. cached=/tmp/a.so, stock=/tmp/b.so:MGPU_CACHED_DISABLE=1,
 *   before=/old/libmgpu_cached.so). Every copy's cache is released before each line; the copies
 *   are interleaved round by round; each cell is the median over ROUNDS of the mean µs per pair.
 *   The ratio columns are each copy / the first copy named "stock" (no "stock": none).
 * Built and run by benchmarks/alloc_bench.py --pairs.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_LIBS 8
#define MAX_ROUNDS 64

typedef struct lib {
  char name[32];
  int (*enabled)(void);
  void *(*alloc)(uint64_t, void *, _Bool);
  void (*free)(void *, void *);
  void (*memset32)(void *, unsigned, size_t, void *);
  void *stream; /* the touched pairs' memsets go on it (mgpuStreamCreate) */
  uint64_t (*release)(void);
} lib;

static void *sym(void *h, const char *n) {
  void *p = dlsym(h, n);
  if (!p) {
    fprintf(stderr, "missing %s\n", n);
    exit(1);
  }
  return p;
}

/* NAME=LIB[:VAR=VAL] */
static void open_lib(lib *L, const char *spec) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", spec);
  char *eq = strchr(buf, '=');
  if (!eq) {
    fprintf(stderr, "bad spec %s\n", spec);
    exit(2);
  }
  *eq = 0;
  snprintf(L->name, sizeof L->name, "%.31s", buf); /* a label: the first 31 characters */
  char *path = eq + 1, *var = strchr(path, ':'), *val = NULL;
  if (var) {
    *var++ = 0;
    val = strchr(var, '=');
    if (!val) {
      fprintf(stderr, "bad variable in %s\n", spec);
      exit(2);
    }
    *val++ = 0;
    setenv(var, val, 1);
  }
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "%s\n", dlerror());
    exit(1);
  }
  L->enabled = sym(h, "mgpu_cached_enabled");
  L->alloc = sym(h, "mgpuMemAlloc");
  L->free = sym(h, "mgpuMemFree");
  L->memset32 = sym(h, "mgpuMemset32");
  L->release = sym(h, "mgpu_cached_allocator_release");
  L->enabled(); /* reads the environment now */
  L->stream = ((void *(*)(void))sym(h, "mgpuStreamCreate"))();
  if (var) unsetenv(var);
}

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static double pairs(lib *L, uint64_t bytes, int host_shared, int touch, int iters) {
  double t0 = now_us();
  for (int i = 0; i < iters; ++i) {
    void *p = L->alloc(bytes, NULL, host_shared);
    if (!p) {
      fprintf(stderr, "%s: allocation of %llu failed\n", L->name, (unsigned long long)bytes);
      exit(1);
    }
    if (touch) L->memset32(p, 7u, (size_t)(bytes / 4), L->stream);
    L->free(p, NULL);
  }
  return (now_us() - t0) / iters;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s ROUNDS NAME=LIB[:VAR=VAL] ...\n", argv[0]);
    return 2;
  }
  int rounds = atoi(argv[1]);
  if (rounds < 1) rounds = 1;
  if (rounds > MAX_ROUNDS) rounds = MAX_ROUNDS;
  int n = argc - 2 > MAX_LIBS ? MAX_LIBS : argc - 2, stock = -1;
  lib L[MAX_LIBS];
  for (int i = 0; i < n; ++i) {
    open_lib(&L[i], argv[i + 2]);
    if (stock < 0 && strcmp(L[i].name, "stock") == 0) stock = i;
  }
  static const uint64_t sizes[] = {256,     4096,    65536,    128 << 10, 256 << 10,
                                   512 << 10, 1 << 20, 16 << 20, 64 << 20};
  printf("alloc + free(NULL) pair, us (median of %d rounds, copies interleaved)%s\n", rounds,
         stock >= 0 ? "; x = copy / stock" : "");
  printf("%-12s %9s", "kind", "bytes");
  for (int i = 0; i < n; ++i) printf(" %10s", L[i].name);
  if (stock >= 0)
    for (int i = 0; i < n; ++i)
      if (i != stock) printf(" %9.9s/s", L[i].name);
  printf("\n");
  for (int kind = 0; kind < 4; ++kind) {
    int hs = kind & 1, touch = kind >> 1;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; ++si) {
      uint64_t bytes = sizes[si];
      int iters = bytes >= (16u << 20) || (touch && hs) ? 50 : 400;
      double t[MAX_LIBS][MAX_ROUNDS], med[MAX_LIBS];
      for (int i = 0; i < n; ++i) {
        L[i].release();
        pairs(&L[i], bytes, hs, touch, 5); /* warm-up */
      }
      for (int r = 0; r < rounds; ++r)
        for (int k = 0; k < n; ++k) {
          int i = (k + r) % n; /* rotate the order from round to round */
          t[i][r] = pairs(&L[i], bytes, hs, touch, iters);
        }
      for (int i = 0; i < n; ++i) {
        qsort(t[i], (size_t)rounds, sizeof(double), cmp);
        med[i] = rounds % 2 ? t[i][rounds / 2] : (t[i][rounds / 2 - 1] + t[i][rounds / 2]) / 2;
      }
      static const char *const kinds[] = {"device", "host_shared", "dev+touch", "hs+touch"};
      printf("%-12s %9llu", kinds[kind], (unsigned long long)bytes);
      for (int i = 0; i < n; ++i) printf(" %10.2f", med[i]);
      if (stock >= 0)
        for (int i = 0; i < n; ++i)
          if (i != stock) printf(" %10.2fx", med[i] / med[stock]);
      printf("\n");
      fflush(stdout);
    }
  }
  for (int i = 0; i < n; ++i) L[i].release();
  return 0;
}
