/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
 * stages.c - where the first call of the LLVM 22 301-kernel module goes, call by call (issue 21
 * item 5). Linked with tests/data/mlir/large_module_llvm22.o and -Wl,--wrap for each mgpu* entry
 * point that object calls; each wrapper adds the call's µs and minor page faults to its stage.
 * With MGPU_CACHED_CUDA_DRIVER pointing at timecuda.so it also gets the µs spent in the driver.
 * Prints, for the constructor's mgpuModuleLoad and the first and second bench(1):
 *   STAGE <stage> <call> <us> <faults> <driver_us>
 * and timecuda's per-call table (stderr). run.sh builds it and runs many processes. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

enum { LOAD, GETFN, SCREATE, LAUNCH, SSYNC, SDESTROY, NCALL };
static const char *const k_names[NCALL] = {"load", "getfn", "screate", "launch", "ssync",
                                           "sdestroy"};
static double g_us[NCALL], g_drv[NCALL];
static long g_flt[NCALL];
static double (*g_tc_us)(void);
static void (*g_tc_dump)(const char *);

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}
static long faults(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}
static double drv(void) { return g_tc_us ? g_tc_us() : 0.0; }
static void *g_drv_handle; /* the driver the library will load (timecuda.so or libcuda.so.1) */
#define ENTER long f0 = faults(); double d0 = drv(), t0 = now_us()
#define LEAVE(i) g_us[i] += now_us() - t0, g_flt[i] += faults() - f0, g_drv[i] += drv() - d0

void *__real_mgpuModuleLoad(void *, size_t);
void *__wrap_mgpuModuleLoad(void *d, size_t n) {
  ENTER;
  void *r = __real_mgpuModuleLoad(d, n);
  LEAVE(LOAD);
  return r;
}
void *__real_mgpuModuleGetFunction(void *, const char *);
void *__wrap_mgpuModuleGetFunction(void *m, const char *n) {
  ENTER;
  void *r = __real_mgpuModuleGetFunction(m, n);
  LEAVE(GETFN);
  return r;
}
void *__real_mgpuStreamCreate(void);
void *__wrap_mgpuStreamCreate(void) {
  ENTER;
  void *r = __real_mgpuStreamCreate();
  LEAVE(SCREATE);
  return r;
}
void __real_mgpuLaunchKernel(void *, intptr_t, intptr_t, intptr_t, intptr_t, intptr_t, intptr_t,
                             int32_t, void *, void **, void **, size_t);
void __wrap_mgpuLaunchKernel(void *f, intptr_t a, intptr_t b, intptr_t c, intptr_t d, intptr_t e,
                             intptr_t g, int32_t s, void *st, void **p, void **x, size_t np) {
  ENTER;
  __real_mgpuLaunchKernel(f, a, b, c, d, e, g, s, st, p, x, np);
  LEAVE(LAUNCH);
}
void __real_mgpuStreamSynchronize(void *);
void __wrap_mgpuStreamSynchronize(void *s) {
  ENTER;
  __real_mgpuStreamSynchronize(s);
  LEAVE(SSYNC);
}
void __real_mgpuStreamDestroy(void *);
void __wrap_mgpuStreamDestroy(void *s) {
  ENTER;
  __real_mgpuStreamDestroy(s);
  LEAVE(SDESTROY);
}

static void report(const char *stage) {
  for (int i = 0; i < NCALL; ++i) {
    if (g_us[i] > 0)
      printf("STAGE %s %s %.2f %ld %.2f\n", stage, k_names[i], g_us[i], g_flt[i], g_drv[i]);
    g_us[i] = g_drv[i] = 0;
    g_flt[i] = 0;
  }
  if (g_tc_dump) g_tc_dump(stage);
}

/* Before the module's constructor (priority 65535), as first_call.c: the driver the library will
 * load (MGPU_CACHED_CUDA_DRIVER, else libcuda.so.1) opened, initialised and the primary context
 * retained, so the constructor's load measures what first_call.c's does. */
__attribute__((constructor(101))) static void warm(void) {
  const char *path = getenv("MGPU_CACHED_CUDA_DRIVER");
  g_drv_handle = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!g_drv_handle) {
    fprintf(stderr, "stages: %s\n", dlerror());
    exit(2);
  }
  int (*init)(unsigned) = (int (*)(unsigned))dlsym(g_drv_handle, "cuInit");
  int (*get)(int *, int) = (int (*)(int *, int))dlsym(g_drv_handle, "cuDeviceGet");
  int (*retain)(void **, int) = (int (*)(void **, int))dlsym(g_drv_handle,
                                                              "cuDevicePrimaryCtxRetain");
  int dev = 0;
  void *ctx = NULL;
  if (!init || !get || !retain || init(0) || get(&dev, 0) || retain(&ctx, dev)) {
    fprintf(stderr, "stages: no CUDA device\n");
    exit(2);
  }
  g_tc_us = (double (*)(void))dlsym(g_drv_handle, "timecuda_us");
  g_tc_dump = (void (*)(const char *))dlsym(g_drv_handle, "timecuda_dump");
  if (g_tc_dump) g_tc_dump("warm");
}

void bench(int64_t n);
int main(void) {
  report("ctor");
  bench(1);
  report("first");
  bench(1);
  report("second");
  return 0;
}
