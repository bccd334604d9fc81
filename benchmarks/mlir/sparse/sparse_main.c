/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* sparse_main.c - runs the MLIR sparse GPU programs (sparse_gpu.mlir, compiled by compile.sh into
 * sparse_gpu_llvmN.o) and checks each result against a CPU reference computed here.
 *
 *   sparse_main [--no-check] [--dirty] [--warmup W] [--reps N] [name...]
 *   names: spmv spmm sddmm spgemm matmul24 (default: all)
 *
 * Prints one line per program: "<name> ok|FAIL max_abs_err=<e> bad_reps=<k> reps=<N>
 * us_per_call=<t> first_us=<f>" (every repetition's result is checked; the time includes the
 * checks; t is the mean of the N calls after W untimed warm-up calls, f the program's first call,
 * which carries the libraries' first-use costs: loading kernels, a first plan) and exits
 * with the number of failures. --dirty: before every call, allocate, fill with a pattern and free
 * device blocks of common sizes, so that a program reading device memory it never wrote sees
 * garbage instead of zeros or its own previous results. Inputs are small integers, so every result is exact in f32
 * and f16 and the comparison is exact. --no-check runs the calls without comparing (the CPU tests
 * use it with fake libraries that do not compute). Link: cc sparse_main.c sparse_gpu_llvm19.o
 * -lmgpu_cached (or the stock libmlir_cuda_runtime.so). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct { float *alloc, *data; int64_t off, n[1], s[1]; } M1;
typedef struct { float *alloc, *data; int64_t off, n[2], s[2]; } M2;
typedef struct { uint16_t *alloc, *data; int64_t off, n[2], s[2]; } H2;

void _mlir_ciface_spmv(M1 *r, M2 *A, M1 *x, M1 *y);
void _mlir_ciface_spmm(M2 *r, M2 *A, M2 *B, M2 *C);
void _mlir_ciface_sddmm(M2 *r, M2 *S, M2 *A, M2 *B);
void _mlir_ciface_spgemm(M2 *r, M2 *A, M2 *B);
void _mlir_ciface_matmul24(H2 *r, H2 *A, H2 *B, H2 *C);
void mgpuCreateSparseEnv(void);
void mgpuDestroySparseEnv(void);
void mgpuCreateSparseLtEnv(void);
void mgpuDestroySparseLtEnv(void);

static int g_check = 1, g_reps = 1, g_warmup = 0, g_dirty = 0, g_bad = 0;
void *mgpuMemAlloc(uint64_t bytes, void *stream, _Bool host_shared);
void mgpuMemFree(void *ptr, void *stream);
void mgpuMemset32(void *dst, unsigned value, size_t count, void *stream);
void mgpuStreamSynchronize(void *stream);
void *mgpuStreamCreate(void);
void mgpuStreamDestroy(void *stream);

static void dirty(void) {
  if (!g_dirty) return;
  static const size_t sizes[] = {128, 256, 264, 512, 1024, 2048, 4096, 8192};
  void *p[8], *s = mgpuStreamCreate(); /* a stream: the stock wrapper's memset has no context */
  for (int i = 0; i < 8; ++i) {
    p[i] = mgpuMemAlloc(sizes[i], s, 0);
    mgpuMemset32(p[i], 0x3, sizes[i] / 4, s);
  }
  mgpuStreamSynchronize(s);
  for (int i = 0; i < 8; ++i) mgpuMemFree(p[i], s);
  mgpuStreamSynchronize(s);
  mgpuStreamDestroy(s);
}

/* Track one repetition's error: the largest over all, and how many repetitions were wrong. */
static void rep_err(double *max, double e) {
  if (e != 0) g_bad++;
  if (e > *max) *max = e;
}

static M1 v1(int n, float (*f)(int)) {
  M1 m = {0};
  m.alloc = m.data = malloc(sizeof(float) * n);
  m.n[0] = n;
  m.s[0] = 1;
  for (int i = 0; i < n; ++i) m.data[i] = f(i);
  return m;
}
static M2 v2(int r, int c, float (*f)(int, int)) {
  M2 m = {0};
  m.alloc = m.data = malloc(sizeof(float) * r * c);
  m.n[0] = r, m.n[1] = c, m.s[0] = c, m.s[1] = 1;
  for (int i = 0; i < r; ++i)
    for (int j = 0; j < c; ++j) m.data[i * c + j] = f(i, j);
  return m;
}
static M2 copy2(const M2 *a) {
  M2 m = *a;
  size_t n = (size_t)a->n[0] * a->n[1] * sizeof(float);
  m.alloc = m.data = malloc(n);
  memcpy(m.data, a->data, n);
  return m;
}
static M1 copy1(const M1 *a) {
  M1 m = *a;
  m.alloc = m.data = malloc(sizeof(float) * a->n[0]);
  memcpy(m.data, a->data, sizeof(float) * a->n[0]);
  return m;
}
static float at(const M2 *m, int i, int j) { return m->data[m->off + i * m->s[0] + j * m->s[1]]; }

/* Sparse-ish patterns of small integers. */
static float fa(int i, int j) { return (i * 7 + j * 3) % 5 < 2 ? (float)((3 * i + 5 * j) % 4 + 1) : 0.f; }
static float fb(int i, int j) { return (float)((i + 2 * j) % 3); }
static float fc(int i, int j) { return (float)((i * j) % 4); }
static float fs(int i, int j) { return (i + j) % 3 == 0 ? 1.f : 0.f; }
static float fx(int i) { return (float)(i % 4); }
static float fy(int i) { return (float)(i % 3); }

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int report(const char *name, double err, double us, double first) {
  int ok = !g_check || err == 0.0;
  printf("%s %s max_abs_err=%g bad_reps=%d reps=%d us_per_call=%.1f first_us=%.1f\n", name,
         ok ? "ok" : "FAIL", err, g_bad, g_reps, us, first);
  g_bad = 0;
  return ok ? 0 : 1;
}

static int run_spmv(void) {
  M2 A = v2(64, 32, fa);
  M1 x = v1(32, fx), y0 = v1(64, fy), r = {0};
  float ref[64];
  for (int i = 0; i < 64; ++i) {
    ref[i] = y0.data[i];
    for (int j = 0; j < 32; ++j) ref[i] += at(&A, i, j) * x.data[j];
  }
  double err = 0, t0 = now_us(), ts = t0, first = 0;
  for (int k = 0; k < g_warmup + g_reps; ++k) {
    if (k == g_warmup) t0 = now_us();
    M1 y = copy1(&y0);
    dirty();
    _mlir_ciface_spmv(&r, &A, &x, &y);
    double e = 0;
    for (int i = 0; i < 64; ++i) e = fmax(e, fabs(ref[i] - r.data[r.off + i * r.s[0]]));
    rep_err(&err, e);
    if (k == 0) first = now_us() - ts;
  }
  return report("spmv", err, (now_us() - t0) / g_reps, first);
}

static int run_spmm(void) {
  M2 A = v2(64, 32, fa), B = v2(32, 16, fb), C0 = v2(64, 16, fc), r = {0};
  static float ref[64][16];
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 16; ++j) {
      ref[i][j] = at(&C0, i, j);
      for (int k = 0; k < 32; ++k) ref[i][j] += at(&A, i, k) * at(&B, k, j);
    }
  double err = 0, t0 = now_us(), ts = t0, first = 0;
  for (int k = 0; k < g_warmup + g_reps; ++k) {
    if (k == g_warmup) t0 = now_us();
    M2 C = copy2(&C0);
    dirty();
    _mlir_ciface_spmm(&r, &A, &B, &C);
    double e = 0;
    for (int i = 0; i < 64; ++i)
      for (int j = 0; j < 16; ++j) e = fmax(e, fabs(ref[i][j] - at(&r, i, j)));
    rep_err(&err, e);
    if (k == 0) first = now_us() - ts;
  }
  return report("spmm", err, (now_us() - t0) / g_reps, first);
}

static int run_sddmm(void) {
  M2 S = v2(32, 32, fs), A = v2(32, 16, fb), B = v2(16, 32, fc), r = {0};
  static float ref[32][32];
  for (int i = 0; i < 32; ++i)
    for (int j = 0; j < 32; ++j) {
      ref[i][j] = 0;
      if (at(&S, i, j) != 0) {
        ref[i][j] = at(&S, i, j);
        for (int k = 0; k < 16; ++k) ref[i][j] += at(&A, i, k) * at(&B, k, j);
      }
    }
  double err = 0, t0 = now_us(), ts = t0, first = 0;
  for (int k = 0; k < g_warmup + g_reps; ++k) {
    if (k == g_warmup) t0 = now_us();
    dirty();
    _mlir_ciface_sddmm(&r, &S, &A, &B);
    double e = 0;
    for (int i = 0; i < 32; ++i)
      for (int j = 0; j < 32; ++j) e = fmax(e, fabs(ref[i][j] - at(&r, i, j)));
    rep_err(&err, e);
    if (k == 0) first = now_us() - ts;
  }
  return report("sddmm", err, (now_us() - t0) / g_reps, first);
}

static int run_spgemm(void) {
  M2 A = v2(32, 32, fa), B = v2(32, 32, fs), r = {0};
  static float ref[32][32];
  for (int i = 0; i < 32; ++i)
    for (int j = 0; j < 32; ++j) {
      ref[i][j] = 0;
      for (int k = 0; k < 32; ++k) ref[i][j] += at(&A, i, k) * at(&B, k, j);
    }
  double err = 0, t0 = now_us(), ts = t0, first = 0;
  for (int k = 0; k < g_warmup + g_reps; ++k) {
    if (k == g_warmup) t0 = now_us();
    dirty();
    _mlir_ciface_spgemm(&r, &A, &B);
    double e = 0;
    for (int i = 0; i < 32; ++i)
      for (int j = 0; j < 32; ++j) e = fmax(e, fabs(ref[i][j] - at(&r, i, j)));
    rep_err(&err, e);
    if (k == 0) first = now_us() - ts;
  }
  return report("spgemm", err, (now_us() - t0) / g_reps, first);
}

/* f16 <-> f32 for the small integers used here (exact). */
static uint16_t h_of(float f) {
  if (f == 0) return 0;
  int e;
  float m = frexpf(f, &e); /* f = m * 2^e, 0.5 <= m < 1 */
  uint16_t mant = (uint16_t)((m * 2 - 1) * 1024 + 0.5f);
  return (uint16_t)(((e - 1 + 15) << 10) | mant);
}
static float f_of(uint16_t h) {
  if ((h & 0x7fff) == 0) return 0;
  int e = (h >> 10) & 0x1f;
  float m = 1 + (h & 0x3ff) / 1024.f;
  return ldexpf(m, e - 15) * ((h & 0x8000) ? -1 : 1);
}
static H2 h2(int r, int c, float (*f)(int, int)) {
  H2 m = {0};
  m.alloc = m.data = malloc(2 * r * c);
  m.n[0] = r, m.n[1] = c, m.s[0] = c, m.s[1] = 1;
  for (int i = 0; i < r; ++i)
    for (int j = 0; j < c; ++j) m.data[i * c + j] = h_of(f(i, j));
  return m;
}
/* 2:4 along rows: two nonzeros in every group of four. */
static float f24(int i, int j) { return (j % 4 == (i % 2) || j % 4 == 2 + (i % 2)) ? (float)((i + j) % 2 + 1) : 0.f; }

static int run_matmul24(void) {
  H2 A = h2(16, 16, f24), B = h2(16, 16, fb), C0 = h2(16, 16, fc), r = {0};
  static float ref[16][16];
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      ref[i][j] = f_of(C0.data[i * 16 + j]);
      for (int k = 0; k < 16; ++k)
        ref[i][j] += f_of(A.data[i * 16 + k]) * f_of(B.data[k * 16 + j]);
    }
  double err = 0, t0 = now_us(), ts = t0, first = 0;
  for (int k = 0; k < g_warmup + g_reps; ++k) {
    if (k == g_warmup) t0 = now_us();
    H2 C = C0;
    C.alloc = C.data = malloc(2 * 256);
    memcpy(C.data, C0.data, 2 * 256);
    dirty();
    _mlir_ciface_matmul24(&r, &A, &B, &C);
    double e = 0;
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 16; ++j)
        e = fmax(e, fabs(ref[i][j] - f_of(r.data[r.off + i * r.s[0] + j * r.s[1]])));
    rep_err(&err, e);
    if (k == 0) first = now_us() - ts;
  }
  return report("matmul24", err, (now_us() - t0) / g_reps, first);
}

int main(int argc, char **argv) {
  const char *names[8];
  int n = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--no-check")) g_check = 0;
    else if (!strcmp(argv[i], "--dirty")) g_dirty = 1;
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) g_reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) g_warmup = atoi(argv[++i]);
    else if (n < 8) names[n++] = argv[i];
  }
  static const char *all[] = {"spmv", "spmm", "sddmm", "spgemm", "matmul24"};
  if (!n) {
    for (int i = 0; i < 5; ++i) names[i] = all[i];
    n = 5;
  }
  mgpuCreateSparseEnv();
  int fails = 0, lt = 0;
  for (int i = 0; i < n; ++i) {
    if (!strcmp(names[i], "spmv")) fails += run_spmv();
    else if (!strcmp(names[i], "spmm")) fails += run_spmm();
    else if (!strcmp(names[i], "sddmm")) fails += run_sddmm();
    else if (!strcmp(names[i], "spgemm")) fails += run_spgemm();
    else if (!strcmp(names[i], "matmul24")) {
      if (!lt++) mgpuCreateSparseLtEnv();
      fails += run_matmul24();
    } else {
      fprintf(stderr, "unknown program %s\n", names[i]);
      fails++;
    }
  }
  if (lt) mgpuDestroySparseLtEnv();
  mgpuDestroySparseEnv();
  return fails;
}
