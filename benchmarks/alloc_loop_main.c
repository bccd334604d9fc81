/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* alloc_loop_main.c - runs the MLIR-compiled alloc_loop (benchmarks/mlir/alloc_loop.mlir, objects in
 * tests/data/mlir/alloc_loop_llvm{19,22}.o): `alloc_loop_main N` prints the µs per step of N steps
 * (after a 20-step warm-up) and exits 1 if the GPU's results, read by the host, are wrong. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

float alloc_loop(int64_t n);

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
  int64_t n = argc > 1 ? atoll(argv[1]) : 1000;
  float warm = alloc_loop(20);
  double t0 = now_us();
  float sum = alloc_loop(n);
  double t = now_us() - t0;
  int ok = warm == 190.0f && sum == (float)(n * (n - 1) / 2);
  printf("%.3f us/step%s\n", t / (double)n, ok ? "" : " WRONG RESULT");
  return ok ? 0 : 1;
}
