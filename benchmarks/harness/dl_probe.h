/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* dl_probe.h - for the probes that load the CUDA driver at run time, without its headers
 * (alloc_driver_probe.c, graph_build_probe.c, mixed_stream_probe.c, managed_rotation_probe.c): an
 * untyped entry point type, PROBE_SYM (an entry point of the handle `cu`, or exit 3), PROBE_CK (a
 * call that must return 0, or exit 4), the median of a sample, a one-node graph's kernel node parameters
 * (CUDA_KERNEL_NODE_PARAMS's layout) and probe_open: the driver's module, stream, launch and graph
 * entry points with device 0's primary context made current. Header-only, C11; with programs.h
 * for cmp_double. */
#ifndef BENCH_DL_PROBE_H
#define BENCH_DL_PROBE_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness/programs.h" /* now_us, cmp_double */

typedef int (*fn_t)();

/* the same layout as the driver's CUDA_KERNEL_NODE_PARAMS (v1) */
typedef struct {
  void *func;
  unsigned gx, gy, gz, bx, by, bz, smem;
  void **params, **extra;
} probe_node_params;

#define PROBE_SYM(v, n)                                                                       \
  if (!((v) = (fn_t)dlsym(cu, n))) {                                                          \
    fprintf(stderr, "no %s\n", n);                                                            \
    return 3;                                                                                 \
  }
#define PROBE_CK(x)                                                                           \
  do {                                                                                        \
    int rc_ = (x);                                                                            \
    if (rc_) {                                                                                \
      fprintf(stderr, "%s: %d\n", #x, rc_);                                                   \
      return 4;                                                                               \
    }                                                                                         \
  } while (0)

static inline double probe_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

/* The driver's entry points the launch probes use. */
typedef struct {
  fn_t load, getfn, screate, ssync, gcreate, gadd, ginst, glaunch;
  int (*launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                void *, void **, void **);
} probe_driver;

/* libcuda.so.1 opened, d filled, the driver initialised and device 0's primary context made
 * current on this thread: 0, else (after a message on stderr) 3. */
static inline int probe_open(probe_driver *d) {
  void *cu = dlopen("libcuda.so.1", RTLD_NOW);
  if (!cu) {
    fprintf(stderr, "no libcuda.so.1\n");
    return 3;
  }
  fn_t init, devget, retain, setcur;
  PROBE_SYM(init, "cuInit");
  PROBE_SYM(devget, "cuDeviceGet");
  PROBE_SYM(retain, "cuDevicePrimaryCtxRetain");
  PROBE_SYM(setcur, "cuCtxSetCurrent");
  PROBE_SYM(d->load, "cuModuleLoadData");
  PROBE_SYM(d->getfn, "cuModuleGetFunction");
  PROBE_SYM(d->screate, "cuStreamCreate");
  PROBE_SYM(d->ssync, "cuStreamSynchronize");
  PROBE_SYM(d->gcreate, "cuGraphCreate");
  PROBE_SYM(d->gadd, "cuGraphAddKernelNode_v2");
  PROBE_SYM(d->ginst, "cuGraphInstantiateWithFlags");
  PROBE_SYM(d->glaunch, "cuGraphLaunch");
  fn_t launch;
  PROBE_SYM(launch, "cuLaunchKernel");
  d->launch = (int (*)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                       unsigned, void *, void **, void **))launch;
  int dev = 0;
  void *ctx = NULL;
  if (init(0) || devget(&dev, 0) || retain(&ctx, dev) || setcur(ctx)) {
    fprintf(stderr, "no CUDA device\n");
    return 3;
  }
  return 0;
}

#endif
