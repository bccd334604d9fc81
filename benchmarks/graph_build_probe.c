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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/dl_probe.h"


int main(int argc, char **argv) {
  if (argc < 3) return 2;
  int n = atoi(argv[2]);
  if (n < 1 || n > 64) return 2;
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 2;
  static char blob[8 << 20];
  if (fread(blob, 1, sizeof blob, f) == 0) return 2;
  fclose(f);
  probe_driver d;
  if (probe_open(&d)) return 3;
  void *mod = NULL, *s = NULL;
  PROBE_CK(d.load(&mod, blob));
  PROBE_CK(d.screate(&s, 1));
  printf("%-5s %9s %9s %9s %9s %11s\n", "kernel", "first", "build", "stream", "graph",
         "break_even");
  for (int k = 0; k < n; ++k) {
    char name[16];
    snprintf(name, sizeof name, "k%d", k);
    void *fn = NULL, *g = NULL, *node = NULL, *exec = NULL;
    PROBE_CK(d.getfn(&fn, mod, name));
    double t0 = now_us();
    PROBE_CK(d.launch(fn, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL)); PROBE_CK(d.ssync(s));
    double first = now_us() - t0;
    t0 = now_us();
    probe_node_params p = {fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL};
    PROBE_CK(d.gcreate(&g, 0)); PROBE_CK(d.gadd(&node, g, NULL, (size_t)0, &p));
    PROBE_CK(d.ginst(&exec, g, (unsigned long long)0));
    double build = now_us() - t0;
    double st[50], gr[50];
    for (int i = 0; i < 50; ++i) {
      t0 = now_us();
      PROBE_CK(d.launch(fn, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL)); PROBE_CK(d.ssync(s));
      st[i] = now_us() - t0;
      t0 = now_us();
      PROBE_CK(d.glaunch(exec, s)); PROBE_CK(d.ssync(s));
      gr[i] = now_us() - t0;
    }
    double ms = probe_median(st, 50), mg = probe_median(gr, 50);
    printf("%-5s %9.2f %9.2f %9.2f %9.2f %11.1f\n", name, first, build, ms, mg,
           ms > mg ? build / (ms - mg) : -1.0);
  }
  return 0;
}
