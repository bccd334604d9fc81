/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* mlir_harness.c - runs the MLIR-compiled test programs (tests/data/mlir/*.o).
 *
 *   harness N            (linked with empty_loop_llvmV.o) bench(N): N empty launches
 *   harness N            (linked with saxpy_llvmV.o, -DSAXPY) N saxpy calls on 1024 floats, checked
 *
 * Prints "ok" and exits 0 on success. With HARNESS_FAKE_COUNTS=name1,name2 it also prints the
 * fake driver's call counts (the driver named by MGPU_CACHED_CUDA_DRIVER) as "count name value".
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../csrc/include/mgpu_abi.h"
#include "fake_counts.h"

#ifdef SAXPY
typedef struct { float *allocated, *aligned; int64_t offset, sizes[1], strides[1]; } MemRef1DF32;
void _mlir_ciface_saxpy(float a, MemRef1DF32 *x, MemRef1DF32 *y);
#else
void bench(int64_t n);
#endif


int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 10;
#ifdef SAXPY
  enum { N = 1024 };
  static float hx[N], hy[N], out[N];
  for (int i = 0; i < N; ++i) {
    hx[i] = (float)(i % 13);
    hy[i] = (float)(i % 5);
  }
  void *s = mgpuStreamCreate();
  float *dx = mgpuMemAlloc(sizeof hx, s, false), *dy = mgpuMemAlloc(sizeof hy, s, false);
  mgpuMemcpy(dx, hx, sizeof hx, s);
  mgpuMemcpy(dy, hy, sizeof hy, s);
  mgpuStreamSynchronize(s);
  MemRef1DF32 x = {dx, dx, 0, {N}, {1}}, y = {dy, dy, 0, {N}, {1}};
  for (long it = 0; it < n; ++it) _mlir_ciface_saxpy(2.0f, &x, &y);
  mgpuMemcpy(out, dy, sizeof out, s);
  mgpuStreamSynchronize(s);
  int bad = 0;
  if (!getenv("HARNESS_NO_CHECK"))
    for (int i = 0; i < N; ++i)
      if (out[i] != hy[i] + 2.0f * (float)n * hx[i]) bad++;
  mgpuMemFree(dx, s);
  mgpuMemFree(dy, s);
  mgpuStreamDestroy(s);
  if (bad) {
    printf("saxpy: %d wrong results\n", bad);
    return 1;
  }
#else
  bench(n);
#endif
  report_fake_counts();
  printf("ok\n");
  return 0;
}
