/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* programs.h - what the benchmark programs compute, shared by the MLIR harness (harness.c) and the
 * driver-level floor (floor.c), also used by chain.c and callcost.c: input initialisation, the CPU
 * reference check, result hashing, timing, the one-line JSON report and reading a kernel blob.
 * Header-only (static functions), C11.
 *
 * Programs (benchmarks/mlir/NAME.mlir):
 *   empty           an empty 1x1 kernel launched n times              (no result)
 *   stencil         n Jacobi steps of a 66x66 f64 Laplacian, a<->b swapped after each step
 *   async           n async steps (2 producers on their own streams, joined, then combine),
 *                   three host_shared buffers allocated and freed per step
 *   async_prealloc  the same step with the three buffers made once
 */
#ifndef BENCH_PROGRAMS_H
#define BENCH_PROGRAMS_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ST_N 66       /* stencil grid side (64x64 interior) */
#define AS_N 65536    /* async step vector length */
#define AS_K 1024     /* dependent multiply-adds per element in each producer */
#define CHECK_STEPS 10 /* steps of the separate, CPU-checked run */

static inline double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

static inline uint64_t fnv1a(const void *p, size_t n, uint64_t h) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}
#define FNV_SEED 14695981039346656037ull

/* The whole file at `path` in a malloc'd buffer (NUL-terminated, for a PTX image), its length in
 * *size when size is not NULL; on failure a message and exit(2). */
static inline void *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    exit(2);
  }
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)len + 1);
  if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) exit(2);
  buf[len] = 0;
  fclose(f);
  if (size) *size = (size_t)len;
  return buf;
}

/* After `warm` untimed iterations, `reps` timed runs of `n` iterations: us[r] = µs per iteration. */
static inline void time_reps(void (*run)(long), long warm, long n, int reps, double *us) {
  if (warm) run(warm);
  for (int r = 0; r < reps; ++r) {
    double t0 = now_us();
    run(n);
    us[r] = (now_us() - t0) / (double)n;
  }
}

/* ---- stencil ---------------------------------------------------------------------------------- */
static inline void stencil_init(double *a, double *b) {
  for (int r = 0; r < ST_N; ++r)
    for (int c = 0; c < ST_N; ++c)
      a[r * ST_N + c] = r == 0 ? 1.0 : (double)((r * 7 + c * 3) % 11) / 11.0;
  memcpy(b, a, sizeof(double) * ST_N * ST_N);
}

/* Max abs difference between `got` and `steps` CPU steps from stencil_init (steps even). */
static inline double stencil_error(const double *got, long steps) {
  static double a[ST_N * ST_N], b[ST_N * ST_N];
  stencil_init(a, b);
  double *in = a, *out = b;
  for (long s = 0; s < steps; ++s) {
    for (int r = 1; r < ST_N - 1; ++r)
      for (int c = 1; c < ST_N - 1; ++c) {
        double v = in[r * ST_N + c];
        double lap = in[(r - 1) * ST_N + c] + in[(r + 1) * ST_N + c] + in[r * ST_N + c - 1] +
                     in[r * ST_N + c + 1] - 4.0 * v;
        out[r * ST_N + c] = v + 0.1 * lap;
      }
    double *t = in; in = out; out = t;
  }
  double err = 0;
  for (int i = 0; i < ST_N * ST_N; ++i) err = fmax(err, fabs(got[i] - in[i]));
  return err;
}

/* ---- async step ------------------------------------------------------------------------------- */
static inline void async_init(float *x, float *y, float *acc) {
  for (int i = 0; i < AS_N; ++i) {
    x[i] = (float)(i % 97) / 97.0f;
    y[i] = (float)(i % 89) / 89.0f;
    acc[i] = 0.0f;
  }
}

/* Max relative error of acc after `steps` steps from async_init, on every 7th element. */
static inline double async_error(const float *x, const float *y, const float *acc, long steps) {
  double err = 0;
  for (int i = 0; i < AS_N; i += 7) {
    float va = 0.0f, vb = 1.0f, ka = x[i] * 0.001f, kb = y[i] * 0.002f;
    for (int j = 0; j < AS_K; ++j) {
      va = va * 0.999f + ka;
      vb = vb * 0.998f + kb;
    }
    double want = (double)steps * (double)va * (double)vb;
    double e = fabs((double)acc[i] - want) / fmax(fabs(want), 1e-6);
    err = fmax(err, e);
  }
  return err;
}

/* ---- report ----------------------------------------------------------------------------------- */
static inline int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of v[0..n) (sorted in place; the mean of the two middle values for an even n). */
static inline double sample_median(double *v, long n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* What a verified module cache's hits on a heap blob compare: k comparisons of `blob` with a copy
 * of it (memcmp), timed as a chain's k launches are. The median over n timed rounds after `warm`
 * untimed ones, in µs (t: room for n values); -1 if there is no memory or a comparison differs
 * (chain_split_probe.c, chain_pair_probe.c). */
static inline double blob_compare_us(const void *blob, size_t size, long k, long n, long warm,
                                     double *t) {
  unsigned char *copy = malloc(size);
  if (!copy) return -1;
  memcpy(copy, blob, size);
  for (long c = -warm; c < n; ++c) {
    double t0 = now_us();
    long same = 0;
    for (long i = 0; i < k; ++i) {
      same += memcmp(copy, blob, size) == 0;
      __asm__ volatile("" : : "r"(copy), "r"(blob) : "memory");
    }
    if (same != k) {
      free(copy);
      return -1;
    }
    if (c >= 0) t[c] = now_us() - t0;
  }
  free(copy);
  return sample_median(t, n);
}

/* One JSON line on stdout: per-repetition µs per iteration, the result hash, the check. */
static inline void report(const char *program, long n, const double *us, int reps, uint64_t hash,
                   const char *check, const char *extra) {
  double sorted[64];
  int m = reps < 64 ? reps : 64;
  memcpy(sorted, us, sizeof(double) * (size_t)m);
  qsort(sorted, (size_t)m, sizeof(double), cmp_double);
  printf("{\"program\": \"%s\", \"n\": %ld, \"median_us\": %.4f, \"us\": [", program, n,
         m ? sorted[m / 2] : 0.0);
  for (int i = 0; i < m; ++i) printf("%s%.4f", i ? ", " : "", us[i]);
  printf("], \"hash\": \"%016llx\", \"check\": \"%s\"%s%s}\n", (unsigned long long)hash, check,
         extra ? ", " : "", extra ? extra : "");
  fflush(stdout);
}

#endif
