/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* driver_setup.h - for the harness programs that call the CUDA driver themselves (floor.c, chain.c,
 * driver_calls.c): CK, which exits with the program's name, the call and the driver's error name
 * when a call fails, and driver_setup, which makes device 0's primary context current and loads a
 * module from an image. Header-only, C11 with _GNU_SOURCE (program_invocation_short_name).
 */
#ifndef BENCH_DRIVER_SETUP_H
#define BENCH_DRIVER_SETUP_H

#include <cuda.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

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

#endif
