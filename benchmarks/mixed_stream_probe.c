/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
 * mixed_stream_probe.c - does a stream's history of cuLaunchKernel launches change what a graph
 * launch on it costs later? (issue 21: with the exec thresholds, a stream takes its first launches
 * through cuLaunchKernel before graph launches; run N6 found steady launches ~0.1-0.15 us slower.)
 * Two streams, one exec each for the kernel `empty` of BLOB: stream `fresh` has only graph
 * launches; stream `mixed` first gets K cuLaunchKernel + sync. Then R rounds alternate, each
 * timing 200 graph launches + sync on each stream (us per launch + sync, median of rounds); then
 * the same for cuLaunchKernel + sync.
 *   cc -O2 -Ibenchmarks -o probe benchmarks/mixed_stream_probe.c -ldl; ./probe BLOB K R */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness/programs.h" /* now_us, cmp_double */

typedef int (*fn_t)();
typedef struct {
  void *func;
  unsigned gx, gy, gz, bx, by, bz, smem;
  void **params, **extra;
} node_params;
static int (*launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                     void *, void **, void **);
static fn_t ssync, glaunch;

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}
static double graph_round(void *exec, void *s) {
  double t0 = now_us();
  for (int i = 0; i < 200; ++i)
    if (glaunch(exec, s) || ssync(s)) return -1;
  return (now_us() - t0) / 200;
}
static double kernel_round(void *fn, void *s) {
  double t0 = now_us();
  for (int i = 0; i < 200; ++i)
    if (launch(fn, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL) || ssync(s)) return -1;
  return (now_us() - t0) / 200;
}
#define SYM(v, n) if (!(v = (fn_t)dlsym(cu, n))) { fprintf(stderr, "no %s\n", n); return 3; }
#define CK(x) do { int rc_ = (x); if (rc_) { fprintf(stderr, "%s: %d\n", #x, rc_); return 4; } } while (0)
int main(int argc, char **argv) {
  if (argc < 4) return 2;
  int k = atoi(argv[2]), r = atoi(argv[3]);
  if (k < 0 || r < 1 || r > 200) return 2;
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 2;
  static char blob[8 << 20];
  if (fread(blob, 1, sizeof blob, f) == 0) return 2;
  fclose(f);
  void *cu = dlopen("libcuda.so.1", RTLD_NOW);
  if (!cu) return 3;
  fn_t init, devget, retain, setcur, load, getfn, screate, gcreate, gadd, ginst;
  SYM(init, "cuInit"); SYM(devget, "cuDeviceGet"); SYM(retain, "cuDevicePrimaryCtxRetain");
  SYM(setcur, "cuCtxSetCurrent"); SYM(load, "cuModuleLoadData"); SYM(getfn, "cuModuleGetFunction");
  SYM(screate, "cuStreamCreate"); SYM(ssync, "cuStreamSynchronize"); SYM(gcreate, "cuGraphCreate");
  SYM(gadd, "cuGraphAddKernelNode_v2"); SYM(ginst, "cuGraphInstantiateWithFlags");
  SYM(glaunch, "cuGraphLaunch");
  launch = (int (*)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                    void *, void **, void **))dlsym(cu, "cuLaunchKernel");
  int dev = 0;
  void *ctx = NULL, *mod = NULL, *fn = NULL, *s[2] = {NULL, NULL}, *exec[2];
  CK(init(0)); CK(devget(&dev, 0)); CK(retain(&ctx, dev)); CK(setcur(ctx));
  CK(load(&mod, blob)); CK(getfn(&fn, mod, "empty"));
  for (int i = 0; i < 2; ++i) {
    void *g = NULL, *node = NULL;
    node_params p = {fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL};
    CK(screate(&s[i], 1)); CK(gcreate(&g, 0)); CK(gadd(&node, g, NULL, (size_t)0, &p));
    CK(ginst(&exec[i], g, (unsigned long long)0));
  }
  for (int i = 0; i < k; ++i) CK(launch(fn, 1, 1, 1, 1, 1, 1, 0, s[1], NULL, NULL));
  CK(ssync(s[1]));
  double g[2][200], kl[2][200];
  for (int i = 0; i < r; ++i) /* graph launches only first: the history stays as made */
    for (int j = 0; j < 2; ++j) g[j][i] = graph_round(exec[j], s[j]);
  for (int i = 0; i < r; ++i)
    for (int j = 0; j < 2; ++j) kl[j][i] = kernel_round(fn, s[j]);
  printf("K=%d: graph launch+sync fresh %.3f mixed %.3f us; cuLaunchKernel+sync fresh %.3f mixed %.3f us\n",
         k, median(g[0], r), median(g[1], r), median(kl[0], r), median(kl[1], r));
  return 0;
}
