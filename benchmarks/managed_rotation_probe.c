/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
 * managed_rotation_probe.c - does a loop that writes a host_shared (managed) block on the GPU and
 * then reads one element of it on the host (MLIR's alloc_loop shape) pay more per step when it
 * goes round K blocks than when it reuses one? Per K (1, 2, 4, 8) and block size (64 KiB, 1 MiB):
 * the median over ROUNDS of the µs per step of 400 steps of: cuMemsetD32Async(block k % K) on a
 * stream + cuStreamSynchronize + a host read of its first word. (Which block a caching allocator
 * hands out next decides K: the one freed last, or older ones.) The driver is loaded at run time.
 *   cc -O2 -Ibenchmarks -o probe benchmarks/managed_rotation_probe.c -ldl -lm; ./probe [ROUNDS] */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness/dl_probe.h" /* probe_open, PROBE_SYM, probe_median */

int main(int argc, char **argv) {
  int R = argc > 1 ? atoi(argv[1]) : 7;
  if (R < 1 || R > 100) R = 7;
  probe_driver d;
  if (probe_open(&d)) return 3;
  void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  fn_t alloc_managed, memset32;
  PROBE_SYM(alloc_managed, "cuMemAllocManaged");
  PROBE_SYM(memset32, "cuMemsetD32Async");
  void *s = NULL;
  PROBE_CK(d.screate(&s, 1));
  enum { STEPS = 400, KMAX = 8 };
  static const size_t sizes[] = {65536, 1 << 20};
  static const int ks[] = {1, 2, 4, 8};
  printf("%-10s %10s %10s %10s %10s   (us per step: GPU write, sync, host read of word 0)\n",
         "bytes", "K=1", "K=2", "K=4", "K=8");
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; ++si) {
    size_t n = sizes[si];
    uint64_t b[KMAX];
    for (int k = 0; k < KMAX; ++k)
      PROBE_CK(alloc_managed(&b[k], n, 1));
    double t[4][100];
    volatile uint32_t sink = 0;
    for (int r = 0; r < R; ++r)
      for (int ki = 0; ki < 4; ++ki) {
        int K = ks[ki];
        double t0 = now_us();
        for (int i = 0; i < STEPS; ++i) {
          uint64_t p = b[i % K];
          memset32(p, (unsigned)i, n / 4, s);
          d.ssync(s);
          sink += *(volatile uint32_t *)(uintptr_t)p;
        }
        t[ki][r] = (now_us() - t0) / STEPS;
      }
    printf("%-10zu", n);
    for (int ki = 0; ki < 4; ++ki) printf(" %10.2f", probe_median(t[ki], R));
    printf("\n");
    (void)sink;
  }
  return 0;
}
