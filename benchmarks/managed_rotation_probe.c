/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
 * managed_rotation_probe.c - does a loop that writes a host_shared (managed) block on the GPU and
 * then reads one element of it on the host (MLIR's alloc_loop shape) pay more per step when it
 * goes round K blocks than when it reuses one? Per K (1, 2, 4, 8) and block size (64 KiB, 1 MiB):
 * the median over ROUNDS of the µs per step of 400 steps of: cuMemsetD32Async(block k % K) on a
 * stream + cuStreamSynchronize + a host read of its first word. (Which block a caching allocator
 * hands out next decides K: the one freed last, or older ones.) The driver is loaded at run time.
 *   cc -O2 -Ibenchmarks -o probe benchmarks/managed_rotation_probe.c -ldl -lm; ./probe [ROUNDS] */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness/programs.h" /* now_us, cmp_double */

typedef int (*fn_t)();
#define SYM(n) fn_t n = (fn_t)dlsym(cu, #n); if (!n) { fprintf(stderr, "no %s\n", #n); return 3; }
int main(int argc, char **argv) {
  int R = argc > 1 ? atoi(argv[1]) : 7;
  if (R < 1 || R > 100) R = 7;
  void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!cu) { fprintf(stderr, "no libcuda.so.1\n"); return 3; }
  SYM(cuInit);
  SYM(cuDeviceGet);
  SYM(cuDevicePrimaryCtxRetain);
  SYM(cuCtxSetCurrent);
  SYM(cuMemAllocManaged);
  SYM(cuMemsetD32Async);
  SYM(cuStreamSynchronize);
  SYM(cuStreamCreate);
  int dev = 0;
  void *ctx = NULL, *s = NULL;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
      cuCtxSetCurrent(ctx) || cuStreamCreate(&s, 1))
    return 4;
  enum { STEPS = 400, KMAX = 8 };
  static const size_t sizes[] = {65536, 1 << 20};
  static const int ks[] = {1, 2, 4, 8};
  printf("%-10s %10s %10s %10s %10s   (us per step: GPU write, sync, host read of word 0)\n",
         "bytes", "K=1", "K=2", "K=4", "K=8");
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; ++si) {
    size_t n = sizes[si];
    uint64_t b[KMAX];
    for (int k = 0; k < KMAX; ++k)
      if (cuMemAllocManaged(&b[k], n, 1)) return 5;
    double t[4][100];
    volatile uint32_t sink = 0;
    for (int r = 0; r < R; ++r)
      for (int ki = 0; ki < 4; ++ki) {
        int K = ks[ki];
        double t0 = now_us();
        for (int i = 0; i < STEPS; ++i) {
          uint64_t p = b[i % K];
          cuMemsetD32Async(p, (unsigned)i, n / 4, s);
          cuStreamSynchronize(s);
          sink += *(volatile uint32_t *)(uintptr_t)p;
        }
        t[ki][r] = (now_us() - t0) / STEPS;
      }
    printf("%-10zu", n);
    for (int ki = 0; ki < 4; ++ki) {
      qsort(t[ki], (size_t)R, sizeof(double), cmp_double);
      printf(" %10.2f", t[ki][R / 2]);
    }
    printf("\n");
    (void)sink;
  }
  return 0;
}
