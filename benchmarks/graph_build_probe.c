/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
 * graph_build_probe.c - what a one-node graph exec costs to build, per function, against what it
 * saves per synchronous launch (issue 21: the graph path builds a function's exec at its second
 * launch; run N2 measured that build at 148 us for the process's first function). For each of
 * the first N kernels k0, k1, ... of FATBIN, in order, medians of R (us):
 *   first     its first cuLaunchKernel + cuStreamSynchronize
 *   build     cuGraphCreate + cuGraphAddKernelNode + cuGraphInstantiate of a one-node graph
 *   stream    a later cuLaunchKernel + cuStreamSynchronize (steady, median of 50)
 *   graph     cuGraphLaunch + cuStreamSynchronize of that exec (steady, median of 50)
 * and break_even = build / (stream - graph): the launches after which the exec has paid for
 * itself. The driver is loaded at run time (no CUDA headers needed).
 *   cc -O2 -Ibenchmarks -o probe benchmarks/graph_build_probe.c -ldl; ./probe FATBIN N */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/programs.h" /* now_us, cmp_double */

typedef int (*fn_t)();
typedef struct {
  void *func;
  unsigned gx, gy, gz, bx, by, bz, smem;
  void **params, **extra;
} node_params;

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}
#define SYM(v, n) if (!(v = (fn_t)dlsym(cu, n))) { fprintf(stderr, "no %s\n", n); return 3; }
#define CK(x) do { int rc_ = (x); if (rc_) { fprintf(stderr, "%s: %d\n", #x, rc_); return 4; } } while (0)
int main(int argc, char **argv) {
  if (argc < 3) return 2;
  int n = atoi(argv[2]);
  if (n < 1 || n > 64) return 2;
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 2;
  static char blob[8 << 20];
  if (fread(blob, 1, sizeof blob, f) == 0) return 2;
  fclose(f);
  void *cu = dlopen("libcuda.so.1", RTLD_NOW);
  if (!cu) { fprintf(stderr, "no libcuda.so.1\n"); return 3; }
  fn_t init, devget, retain, setcur, load, getfn, screate, ssync, gcreate, gadd, ginst, glaunch;
  int (*launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                void *, void **, void **);
  SYM(init, "cuInit"); SYM(devget, "cuDeviceGet"); SYM(retain, "cuDevicePrimaryCtxRetain");
  SYM(setcur, "cuCtxSetCurrent"); SYM(load, "cuModuleLoadData"); SYM(getfn, "cuModuleGetFunction");
  SYM(screate, "cuStreamCreate"); SYM(ssync, "cuStreamSynchronize"); SYM(gcreate, "cuGraphCreate");
  SYM(gadd, "cuGraphAddKernelNode_v2"); SYM(ginst, "cuGraphInstantiateWithFlags");
  SYM(glaunch, "cuGraphLaunch");
  launch = (int (*)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                    void *, void **, void **))dlsym(cu, "cuLaunchKernel");
  int dev = 0;
  void *ctx = NULL, *mod = NULL, *s = NULL;
  CK(init(0)); CK(devget(&dev, 0)); CK(retain(&ctx, dev)); CK(setcur(ctx));
  CK(load(&mod, blob)); CK(screate(&s, 1));
  printf("%-5s %9s %9s %9s %9s %11s\n", "kernel", "first", "build", "stream", "graph", "break_even");
  for (int k = 0; k < n; ++k) {
    char name[16];
    snprintf(name, sizeof name, "k%d", k);
    void *fn = NULL, *g = NULL, *node = NULL, *exec = NULL;
    CK(getfn(&fn, mod, name));
    double t0 = now_us();
    CK(launch(fn, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL)); CK(ssync(s));
    double first = now_us() - t0;
    t0 = now_us();
    node_params p = {fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL};
    CK(gcreate(&g, 0)); CK(gadd(&node, g, NULL, (size_t)0, &p));
    CK(ginst(&exec, g, (unsigned long long)0));
    double build = now_us() - t0;
    double st[50], gr[50];
    for (int i = 0; i < 50; ++i) {
      t0 = now_us();
      CK(launch(fn, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL)); CK(ssync(s));
      st[i] = now_us() - t0;
      t0 = now_us();
      CK(glaunch(exec, s)); CK(ssync(s));
      gr[i] = now_us() - t0;
    }
    double ms = median(st, 50), mg = median(gr, 50);
    printf("%-5s %9.2f %9.2f %9.2f %9.2f %11.1f\n", name, first, build, ms, mg,
           ms > mg ? build / (ms - mg) : -1.0);
  }
  return 0;
}
