/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* harness.c - times the bench(n) entry points of the MLIR-compiled benchmark programs
 * (tests/data/mlir/<program>_llvmV.o, from benchmarks/mlir/NAME.mlir) under whichever mgpu* runtime
 * the binary is linked against or has preloaded. Build with one of
 *   -DPROG_EMPTY (empty_loop_llvmV.o)  -DPROG_STENCIL (stencil_llvmV.o)
 *   -DPROG_LARGE (large_module_llvmV.o: empty_loop's loop over a module of hundreds of kernels)
 *   -DPROG_ASYNC or -DPROG_ASYNC_PREALLOC (async_step_llvmV.o)
 *
 *   harness N REPS WARMUP
 *
 * Runs bench(WARMUP) once, then REPS timed calls of bench(N) (µs per iteration each), hashes the
 * final state of the results (identical bits expected under every runtime), then a separate short
 * run from fresh inputs checked against a CPU reference. Prints one JSON line (programs.h);
 * exits 1 if the check fails.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "programs.h"

#include "../../csrc/include/mgpu_abi.h"

typedef struct { float *allocated, *aligned; int64_t offset, sizes[1], strides[1]; } MemRef1DF32;
typedef struct { double *allocated, *aligned; int64_t offset, sizes[2], strides[2]; } MemRef2DF64;

#if defined(PROG_EMPTY) || defined(PROG_LARGE)
#ifdef PROG_EMPTY
#define PROGRAM "empty"
#else
#define PROGRAM "large" /* large_module_llvmV.o: the empty kernel of a 301-kernel, 0.9 MB module */
#endif
void bench(int64_t n);
#elif defined(PROG_STENCIL)
#define PROGRAM "stencil"
void _mlir_ciface_bench(int64_t n, MemRef2DF64 *a, MemRef2DF64 *b);
#elif defined(PROG_ASYNC) || defined(PROG_ASYNC_PREALLOC)
#ifdef PROG_ASYNC
#define PROGRAM "async"
#else
#define PROGRAM "async_prealloc"
#endif
void _mlir_ciface_bench(int64_t n, MemRef1DF32 *x, MemRef1DF32 *y, MemRef1DF32 *acc);
void _mlir_ciface_bench_prealloc(int64_t n, MemRef1DF32 *x, MemRef1DF32 *y, MemRef1DF32 *acc,
                                 MemRef1DF32 *h1, MemRef1DF32 *h2, MemRef1DF32 *h3);
#else
#error "define one of PROG_EMPTY, PROG_LARGE, PROG_STENCIL, PROG_ASYNC, PROG_ASYNC_PREALLOC"
#endif

__attribute__((unused)) static void *shared_alloc(size_t bytes) {
  void *p = mgpuMemAlloc(bytes, NULL, true);
  if (!p) {
    fprintf(stderr, "harness: mgpuMemAlloc(%zu, host_shared) failed\n", bytes);
    exit(2);
  }
  return p;
}

#if defined(PROG_STENCIL)
static double *ga, *gb;
static void run(long n) {
  MemRef2DF64 a = {ga, ga, 0, {ST_N, ST_N}, {ST_N, 1}}, b = {gb, gb, 0, {ST_N, ST_N}, {ST_N, 1}};
  _mlir_ciface_bench(n, &a, &b);
}
#elif defined(PROG_ASYNC) || defined(PROG_ASYNC_PREALLOC)
static float *gx, *gy, *gacc, *gh[3];
static MemRef1DF32 m1(float *p) { return (MemRef1DF32){p, p, 0, {AS_N}, {1}}; }
static void run(long n) {
  MemRef1DF32 x = m1(gx), y = m1(gy), acc = m1(gacc);
#ifdef PROG_ASYNC
  _mlir_ciface_bench(n, &x, &y, &acc);
#else
  MemRef1DF32 h1 = m1(gh[0]), h2 = m1(gh[1]), h3 = m1(gh[2]);
  _mlir_ciface_bench_prealloc(n, &x, &y, &acc, &h1, &h2, &h3);
#endif
}
#else
static void run(long n) { bench(n); }
#endif

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s N REPS WARMUP\n", argv[0]);
    return 2;
  }
  long n = atol(argv[1]), warm = atol(argv[3]);
  int reps = atoi(argv[2]);
  if (n < 2 || reps < 1 || reps > 64 || warm < 0) {
    fprintf(stderr, "harness: need N >= 2, 1 <= REPS <= 64, WARMUP >= 0\n");
    return 2;
  }
  n += n & 1; /* even step counts: the stencil's result is back in its first buffer */
  warm += warm & 1;
#if defined(PROG_STENCIL)
  ga = shared_alloc(sizeof(double) * ST_N * ST_N);
  gb = shared_alloc(sizeof(double) * ST_N * ST_N);
  stencil_init(ga, gb);
#elif defined(PROG_ASYNC) || defined(PROG_ASYNC_PREALLOC)
  gx = shared_alloc(sizeof(float) * AS_N);
  gy = shared_alloc(sizeof(float) * AS_N);
  gacc = shared_alloc(sizeof(float) * AS_N);
  for (int i = 0; i < 3; ++i) gh[i] = shared_alloc(sizeof(float) * AS_N);
  async_init(gx, gy, gacc);
#endif
  double us[64];
  time_reps(run, warm, n, reps, us);
  uint64_t hash = FNV_SEED;
  char check[96] = "none";
#if defined(PROG_STENCIL)
  hash = fnv1a(ga, sizeof(double) * ST_N * ST_N, hash);
  stencil_init(ga, gb);
  run(CHECK_STEPS);
  double err = stencil_error(ga, CHECK_STEPS);
  snprintf(check, sizeof check, err < 1e-10 ? "ok" : "FAIL max abs error %g", err);
#elif defined(PROG_ASYNC) || defined(PROG_ASYNC_PREALLOC)
  hash = fnv1a(gacc, sizeof(float) * AS_N, hash);
  async_init(gx, gy, gacc);
  run(CHECK_STEPS);
  double err = async_error(gx, gy, gacc, CHECK_STEPS);
  snprintf(check, sizeof check, err < 1e-4 ? "ok" : "FAIL max rel error %g", err);
#endif
  report(PROGRAM, n, us, reps, hash, check, NULL);
  return strncmp(check, "FAIL", 4) == 0;
}
