/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* driver_setup.h - for the harness programs that call the CUDA driver themselves (floor.c, chain.c,
 * driver_calls.c): CK, which exits with the program's name, the call and the driver's error name
 * when a call fails, driver_setup, which makes device 0's primary context current and loads a
 * module from an image, and driver_chain_exec, a hand-made graph of K launches (chain.c,
 * chain_split_probe.c). Header-only, C11 with _GNU_SOURCE (program_invocation_short_name).
 */
#ifndef BENCH_DRIVER_SETUP_H
#define BENCH_DRIVER_SETUP_H

#include <cuda.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(call)                                                                              \
  do {                                                                                        \
    CUresult r_ = (call);                                                                     \
    if (r_ != CUDA_SUCCESS) {                                                                 \
      const char *s_ = NULL;                                                                  \
      cuGetErrorName(r_, &s_);                                                                \
      fprintf(stderr, "%s: %s failed with %s\n", program_invocation_short_name, #call,        \
              s_ ? s_ : "?");                                                                 \
      exit(2);                                                                                \
    }                                                                                         \
  } while (0)

/* Device 0's primary context made current on the calling thread (*ctx, if given) and `image`
 * loaded into it (cuModuleLoadData). */
static inline CUmodule driver_setup(const void *image, CUcontext *ctx) {
  CUdevice dev;
  CUcontext c;
  CUmodule mod;
  CK(cuInit(0));
  CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&c, dev));
  CK(cuCtxSetCurrent(c));
  CK(cuModuleLoadData(&mod, image));
  if (ctx) *ctx = c;
  return mod;
}

/* A graph of K launches of `f` (no arguments, one thread), each after the one before,
 * instantiated: the hand-made chain that chain replay is measured against (chain.c,
 * chain_split_probe.c). */
static inline CUgraphExec driver_chain_exec(CUfunction f, long K) {
  CUDA_KERNEL_NODE_PARAMS kp;
  memset(&kp, 0, sizeof kp);
  kp.func = f;
  kp.gridDimX = kp.gridDimY = kp.gridDimZ = kp.blockDimX = kp.blockDimY = kp.blockDimZ = 1;
  CUgraph g;
  CUgraphExec exec;
  CK(cuGraphCreate(&g, 0));
  CUgraphNode prev = NULL, node;
  for (long i = 0; i < K; ++i) {
    CK(cuGraphAddKernelNode(&node, g, prev ? &prev : NULL, prev ? 1 : 0, &kp));
    prev = node;
  }
  CK(cuGraphInstantiate(&exec, g, 0));
  return exec;
}

#endif
