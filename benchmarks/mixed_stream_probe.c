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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness/dl_probe.h"

static probe_driver g_d;

static double graph_round(void *exec, void *s) {
  double t0 = now_us();
  for (int i = 0; i < 200; ++i)
    if (g_d.glaunch(exec, s) || g_d.ssync(s)) return -1;
  return (now_us() - t0) / 200;
}
static double kernel_round(void *fn, void *s) {
  double t0 = now_us();
  for (int i = 0; i < 200; ++i)
    if (g_d.launch(fn, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL) || g_d.ssync(s)) return -1;
  return (now_us() - t0) / 200;
}
int main(int argc, char **argv) {
  if (argc < 4) return 2;
  int k = atoi(argv[2]), r = atoi(argv[3]);
  if (k < 0 || r < 1 || r > 200) return 2;
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 2;
  static char blob[8 << 20];
  if (fread(blob, 1, sizeof blob, f) == 0) return 2;
  fclose(f);
  if (probe_open(&g_d)) return 3;
  void *mod = NULL, *fn = NULL, *s[2] = {NULL, NULL}, *exec[2];
  PROBE_CK(g_d.load(&mod, blob));
  PROBE_CK(g_d.getfn(&fn, mod, "empty"));
  for (int i = 0; i < 2; ++i) {
    void *g = NULL, *node = NULL;
    probe_node_params p = {fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL};
    PROBE_CK(g_d.screate(&s[i], 1));
    PROBE_CK(g_d.gcreate(&g, 0));
    PROBE_CK(g_d.gadd(&node, g, NULL, (size_t)0, &p));
    PROBE_CK(g_d.ginst(&exec[i], g, (unsigned long long)0));
  }
  for (int i = 0; i < k; ++i) PROBE_CK(g_d.launch(fn, 1, 1, 1, 1, 1, 1, 0, s[1], NULL, NULL));
  PROBE_CK(g_d.ssync(s[1]));
  double g[2][200], kl[2][200];
  for (int i = 0; i < r; ++i) /* graph launches only first: the history stays as made */
    for (int j = 0; j < 2; ++j) g[j][i] = graph_round(exec[j], s[j]);
  for (int i = 0; i < r; ++i)
    for (int j = 0; j < 2; ++j) kl[j][i] = kernel_round(fn, s[j]);
  printf("K=%d: graph launch+sync fresh %.3f mixed %.3f us; "
         "cuLaunchKernel+sync fresh %.3f mixed %.3f us\n",
         k, probe_median(g[0], r), probe_median(g[1], r), probe_median(kl[0], r),
         probe_median(kl[1], r));
  return 0;
}
