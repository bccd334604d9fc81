/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
 * managed_clear_probe.c - what clearing a host_shared (managed) block costs, against the stock
 * pair (issue 21 item 3b): per size, medians of R rounds, µs:
 *   stock_pair     cuMemAllocManaged + cuMemFree (the stock alloc + free(NULL) of host_shared)
 *   gpu_clear      cuMemsetD32Async on a stream + cuStreamSynchronize (the library's clearing),
 *                  the block last written on the GPU
 *   cpu_clear_gpu  memset() on the host of a block last written on the GPU (pages migrate back)
 *   cpu_clear_cpu  memset() on the host of a block last written on the host
 *   touch_fresh    a GPU memset of a fresh cuMemAllocManaged block (+ sync): first touch
 *   touch_cpu      a GPU memset of a block last cleared on the host (+ sync): pages migrate over
 * The driver is loaded at run time (no CUDA headers needed).
 *   cc -O2 -Ibenchmarks -o probe benchmarks/managed_clear_probe.c -ldl -lm; ./probe [ROUNDS] */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/programs.h" /* now_us, cmp_double */

typedef int (*fn_t)();
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}
#define SYM(n) fn_t n = (fn_t)dlsym(cu, #n); if (!n) { fprintf(stderr, "no %s\n", #n); return 3; }
int main(int argc, char **argv) {
  int R = argc > 1 ? atoi(argv[1]) : 21;
  if (R < 3 || R > 1000) R = 21;
  void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!cu) { fprintf(stderr, "no libcuda.so.1\n"); return 3; }
  SYM(cuInit);
  SYM(cuDeviceGet);
  SYM(cuDevicePrimaryCtxRetain);
  SYM(cuCtxSetCurrent);
  fn_t alloc = (fn_t)dlsym(cu, "cuMemAllocManaged");
  fn_t mfree = (fn_t)dlsym(cu, "cuMemFree_v2");
  fn_t memset32 = (fn_t)dlsym(cu, "cuMemsetD32Async");
  fn_t ssync = (fn_t)dlsym(cu, "cuStreamSynchronize");
  fn_t screate = (fn_t)dlsym(cu, "cuStreamCreate");
  if (!alloc || !mfree || !memset32 || !ssync || !screate) return 3;
  int dev = 0;
  void *ctx = NULL, *s = NULL;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
      cuCtxSetCurrent(ctx) || screate(&s, 1))
    return 4;
  static const size_t sizes[] = {256, 4096, 65536, 1 << 20, 16 << 20, 64 << 20};
  double *v[6];
  for (int k = 0; k < 6; ++k) v[k] = calloc((size_t)R, sizeof(double));
  printf("%-10s %12s %12s %14s %14s %12s %12s\n", "bytes", "stock_pair", "gpu_clear",
         "cpu_clear_gpu", "cpu_clear_cpu", "touch_fresh", "touch_cpu");
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; ++i) {
    size_t n = sizes[i];
    for (int r = 0; r < R; ++r) {
      uint64_t p = 0;
      double t0 = now_us();
      if (alloc(&p, n, 1)) return 5;
      double t1 = now_us();
      memset32(p, 7u, n / 4, s); /* first touch on the GPU */
      ssync(s);
      double t2 = now_us();
      v[4][r] = t2 - t1;
      memset32(p, 9u, n / 4, s); /* the library's clearing of a GPU-resident block */
      ssync(s);
      double t3 = now_us();
      v[1][r] = t3 - t2;
      memset((void *)(uintptr_t)p, 0, n); /* host clearing, pages on the GPU */
      double t4 = now_us();
      v[2][r] = t4 - t3;
      memset((void *)(uintptr_t)p, 0, n); /* host clearing, pages on the host */
      double t5 = now_us();
      v[3][r] = t5 - t4;
      memset32(p, 5u, n / 4, s); /* GPU use after a host clearing */
      ssync(s);
      double t6 = now_us();
      v[5][r] = t6 - t5;
      mfree(p);
      double t7 = now_us();
      v[0][r] = (t1 - t0) + (t7 - t6);
    }
    printf("%-10zu %12.2f %12.2f %14.2f %14.2f %12.2f %12.2f\n", n, median(v[0], R),
           median(v[1], R), median(v[2], R), median(v[3], R), median(v[4], R), median(v[5], R));
  }
  return 0;
}
