/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* first_call.c - the first call of an MLIR program (issue 21 item 5): how long the program waits
 * for its first result, module load included, under whichever mgpu* runtime it is linked against.
 *
 *   first_call N REPS        (linked with large_module_llvmV.o: bench(n), n launches of `empty`)
 *
 * A constructor that runs before the program's own (priority 101; MLIR's module constructor of
 * LLVM >= 21 code has 123) initialises the driver and retains device 0's primary context, so that
 * neither runtime's timing holds the driver's start-up (~100 ms, much noisier than what is
 * measured); then it notes the time. What it prints (one JSON line, µs):
 *   ctor      from there to main: the program's constructor (LLVM >= 21: mgpuModuleLoad of the
 *             whole module) and whatever the runtime does at start-up
 *   first     the first bench(1): LLVM >= 21: mgpuModuleGetFunction + the launch and its stream;
 *             LLVM <= 20: mgpuModuleLoad + mgpuModuleGetFunction + launch + mgpuModuleUnload
 *   total     ctor + first: the program's wait for its first result
 *   second    the second bench(1)
 *   steady    µs per iteration of bench(N) afterwards, REPS times (the per-launch cost)
 * Build: cc -O2 -I$CUDA/include first_call.c large_module_llvmV.o -lmgpu_cached -lcuda -lm
 */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "programs.h"

void bench(int64_t n);

static double t_ctor_end;

__attribute__((constructor(101))) static void warm_driver(void) {
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS) {
    fprintf(stderr, "first_call: no CUDA device\n");
    exit(2);
  }
  t_ctor_end = now_us();
}

static void run(long n) { bench(n); }

int main(int argc, char **argv) {
  double t_main = now_us();
  if (argc != 3) {
    fprintf(stderr, "usage: %s N REPS\n", argv[0]);
    return 2;
  }
  long n = atol(argv[1]);
  int reps = atoi(argv[2]);
  if (n < 1 || reps < 1 || reps > 64) return 2;
  double t0 = now_us();
  bench(1);
  double t1 = now_us();
  bench(1);
  double t2 = now_us();
  double us[64];
  time_reps(run, 0, n, reps, us);
  printf("{\"ctor\": %.3f, \"first\": %.3f, \"total\": %.3f, \"second\": %.3f, \"steady\": [",
         t_main - t_ctor_end, t1 - t0, t_main - t_ctor_end + t1 - t0, t2 - t1);
  for (int r = 0; r < reps; ++r) printf("%s%.3f", r ? ", " : "", us[r]);
  printf("]}\n");
  return 0;
}
