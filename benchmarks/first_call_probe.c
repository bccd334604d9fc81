/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
 * first_call_probe.c - where the first call of a large module goes (issue 21 item 5): one fresh
 * process per measurement, the driver initialised and the primary context current first, then
 * one of (µs, printed as "MODE load=.. get=.. launch+sync=.."):
 *   module     cuModuleLoadData + cuModuleGetFunction (what the stock wrapper does)
 *   library    cuLibraryLoadData + cuLibraryGetKernel + cuKernelGetFunction (what the cache does)
 *   mgpu       mgpuModuleLoad + mgpuModuleGetFunction of LIB (MGPU_CACHED_DISABLE decides the mode)
 * and the kernel `empty` launched once (1 block, no arguments) and synchronised.
 *   cc -O2 -o probe first_call_probe.c -ldl; ./probe MODE BLOB [LIB] */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int (*fn_t)();
static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
#define SYM(h, n) fn_t n = (fn_t)dlsym(h, #n "")
int main(int argc, char **argv) {
  if (argc < 3) return 2;
  FILE *f = fopen(argv[2], "rb");
  if (!f) return 2;
  static char blob[8 << 20];
  size_t n = fread(blob, 1, sizeof blob, f);
  fclose(f);
  (void)n;
  void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!cu) return 3;
  SYM(cu, cuInit);
  fn_t cuDeviceGet = (fn_t)dlsym(cu, "cuDeviceGet");
  fn_t retain = (fn_t)dlsym(cu, "cuDevicePrimaryCtxRetain");
  fn_t setcur = (fn_t)dlsym(cu, "cuCtxSetCurrent");
  fn_t modload = (fn_t)dlsym(cu, "cuModuleLoadData");
  fn_t modget = (fn_t)dlsym(cu, "cuModuleGetFunction");
  fn_t libload = (fn_t)dlsym(cu, "cuLibraryLoadData");
  fn_t libget = (fn_t)dlsym(cu, "cuLibraryGetKernel");
  fn_t kget = (fn_t)dlsym(cu, "cuKernelGetFunction");
  fn_t launch = (fn_t)dlsym(cu, "cuLaunchKernel");
  fn_t csync = (fn_t)dlsym(cu, "cuCtxSynchronize");
  int dev = 0;
  void *ctx = NULL;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || retain(&ctx, dev) || setcur(ctx)) return 4;
  void *fn = NULL, *mod = NULL, *k = NULL;
  double t0 = now_us(), t1, t2, t3;
  if (!strcmp(argv[1], "module")) {
    if (modload(&mod, blob)) return 5;
    t1 = now_us();
    if (modget(&fn, mod, "empty")) return 6;
  } else if (!strcmp(argv[1], "library")) {
    if (libload(&mod, blob, NULL, NULL, 0, NULL, NULL, 0)) return 5;
    t1 = now_us();
    if (libget(&k, mod, "empty") || kget(&fn, k)) return 6;
  } else {
    void *lib = dlopen(argc > 3 ? argv[3] : "libmgpu_cached.so", RTLD_NOW);
    if (!lib) return 7;
    void *(*mload)(void *, size_t) = (void *(*)(void *, size_t))dlsym(lib, "mgpuModuleLoad");
    void *(*mget)(void *, const char *) = (void *(*)(void *, const char *))dlsym(lib, "mgpuModuleGetFunction");
    void *(*scr)(void) = (void *(*)(void))dlsym(lib, "mgpuStreamCreate");
    scr(); /* the library's own start (driver table, context) outside the timing */
    t0 = now_us();
    mod = mload(blob, n);
    t1 = now_us();
    fn = mget(mod, "empty");
    if (!mod || !fn) return 8;
    t2 = now_us();
    printf("%s load=%.0f get=%.0f\n", argv[1], t1 - t0, t2 - t1);
    return 0;
  }
  t2 = now_us();
  if (launch(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) || csync()) return 9;
  t3 = now_us();
  printf("%s load=%.0f get=%.0f launch+sync=%.0f\n", argv[1], t1 - t0, t2 - t1, t3 - t2);
  return 0;
}
