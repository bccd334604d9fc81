/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* gpu_exit.c - on a real GPU: the program returns from main while the caching allocator's
 * reclaimer thread waits in cuCtxSynchronize behind a running kernel (run by
 * tests/gpu/test_allocator_gpu.py). The process must exit normally: the thread is detached and
 * nothing waits for it. Usage: gpu_exit ALLOC_KERNELS_FATBIN ROUNDS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "include/mgpu_abi.h"

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 2;
  static char blob[1 << 22];
  size_t size = fread(blob, 1, sizeof blob, f);
  fclose(f);
  void *fn = mgpuModuleGetFunction(mgpuModuleLoad(blob, size), "spin_write");
  void *a = mgpuStreamCreate(), *b = mgpuStreamCreate();
  int n = 1 << 20;
  long long rounds = atoll(argv[2]);
  int value = 1;
  int *flag = mgpuMemAlloc(4, NULL, 0); /* fresh: reads 0, never set: the kernel runs `rounds` */
  int *p = mgpuMemAlloc((uint64_t)n * 4, a, 0);
  void *args[] = {&flag, &p, &n, &value, &rounds};
  mgpuLaunchKernel(fn, 132, 1, 1, 256, 1, 1, 0, b, args, NULL, 5);
  mgpuMemFree(p, a); /* the reclaimer starts and waits for the kernel */
  usleep(200000);
  printf("exiting\n");
  fflush(stdout);
  return 0;
}
