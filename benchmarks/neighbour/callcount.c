/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* callcount.c - driver calls and CPU time per iteration of the MLIR benchmark programs under a
 * recording driver (no GPU): links one committed object tests/data/mlir/<program>_llvmV.o, as
 * benchmarks/harness/harness.c does, and runs it against the driver MGPU_CACHED_CUDA_DRIVER names.
 *
 *   cc -std=c11 -D_GNU_SOURCE -O2 -DPROG_ASYNC -Ibenchmarks/harness benchmarks/neighbour/callcount.c \
 *      tests/data/mlir/async_step_llvm19.o -Lsrc/mgpu_cached/lib -lmgpu_cached -ldl -lm -o cc_async
 *   MGPU_CACHED_CUDA_DRIVER=libcountcuda.so COUNTCUDA_REAL=libfakecuda.so ./cc_async N WARMUP MODE
 *
 * MODE "count": bench(WARMUP), the counters reset (countcuda_reset), bench(N), then one line
 * "count NAME CALLS_PER_ITERATION" per driver entry point called (tests/drivers/countcuda.c).
 * MODE "time": bench(WARMUP), then 9 timed bench(N), one line "us MEDIAN MIN" (µs per
 * iteration, CPU time of the library and of the driver named: run it against fakecuda.c directly).
 * The library under test is whichever libmgpu_cached.so is linked or LD_PRELOADed. The fake driver
 * runs no kernel (unless FAKECUDA_EXEC): results are not checked.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tests/drivers/symbol_index.h"
#include "programs.h"

#include "../../csrc/include/mgpu_abi.h"

typedef struct { float *allocated, *aligned; int64_t offset, sizes[1], strides[1]; } MemRef1DF32;
typedef struct { double *allocated, *aligned; int64_t offset, sizes[2], strides[2]; } MemRef2DF64;

#if defined(PROG_EMPTY) || defined(PROG_LARGE)
void bench(int64_t n);
static void run(long n) { bench(n); }
#elif defined(PROG_STENCIL)
void _mlir_ciface_bench(int64_t n, MemRef2DF64 *a, MemRef2DF64 *b);
static double *ga, *gb;
static void run(long n) {
  MemRef2DF64 a = {ga, ga, 0, {ST_N, ST_N}, {ST_N, 1}}, b = {gb, gb, 0, {ST_N, ST_N}, {ST_N, 1}};
  _mlir_ciface_bench(n, &a, &b);
}
#elif defined(PROG_ASYNC)
void _mlir_ciface_bench(int64_t n, MemRef1DF32 *x, MemRef1DF32 *y, MemRef1DF32 *acc);
static float *gx, *gy, *gacc;
static MemRef1DF32 m1(float *p) { return (MemRef1DF32){p, p, 0, {AS_N}, {1}}; }
static void run(long n) {
  MemRef1DF32 x = m1(gx), y = m1(gy), acc = m1(gacc);
  _mlir_ciface_bench(n, &x, &y, &acc);
}
#else
#error "define one of PROG_EMPTY, PROG_LARGE, PROG_STENCIL, PROG_ASYNC"
#endif

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s N WARMUP count|time\n", argv[0]);
    return 2;
  }
  long n = atol(argv[1]), warm = atol(argv[2]);
  n += n & 1;
  warm += warm & 1;
#if defined(PROG_STENCIL)
  ga = mgpuMemAlloc(sizeof(double) * ST_N * ST_N, NULL, true);
  gb = mgpuMemAlloc(sizeof(double) * ST_N * ST_N, NULL, true);
#elif defined(PROG_ASYNC)
  gx = mgpuMemAlloc(sizeof(float) * AS_N, NULL, true);
  gy = mgpuMemAlloc(sizeof(float) * AS_N, NULL, true);
  gacc = mgpuMemAlloc(sizeof(float) * AS_N, NULL, true);
#endif
  if (warm) run(warm);
  if (strcmp(argv[3], "count") == 0) {
    const char *drv = getenv("MGPU_CACHED_CUDA_DRIVER");
    void *h = drv ? dlopen(drv, RTLD_NOW | RTLD_NOLOAD) : NULL;
    long (*count)(const char *) = h ? (long (*)(const char *))dlsym(h, "countcuda_count") : NULL;
    void (*reset)(void) = h ? (void (*)(void))dlsym(h, "countcuda_reset") : NULL;
    if (!count || !reset) {
      fprintf(stderr, "callcount: MGPU_CACHED_CUDA_DRIVER is not countcuda\n");
      return 2;
    }
    reset();
    run(n);
    for (int i = 0; i < NSYM; ++i) {
      long c = count(k_fields[i]);
      if (c > 0) printf("count %s %.3f\n", k_fields[i], (double)c / (double)n);
    }
    return 0;
  }
  double us[9];
  for (int r = 0; r < 9; ++r) {
    double t0 = now_us();
    run(n);
    us[r] = (now_us() - t0) / (double)n;
  }
  qsort(us, 9, sizeof *us, cmp_d);
  printf("us %.4f %.4f\n", us[4], us[0]);
  return 0;
}
