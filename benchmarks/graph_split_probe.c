/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* graph_split_probe.c - would submitting a chain in parts hide the host's recording? (issue 21
 * item 2). Chain replay defers every launch of a chain until its wait, so the K launches' host
 * work (run N115: 78 ns a link with the blob in the executable, 126 ns on the heap) adds to the
 * GPU's work instead of overlapping it. This times, with the driver alone, a K-node chain of the
 * empty kernel made as one graph and as two (the first M nodes, then the rest), with SPIN_NS of
 * host work per node standing in for the library's recording: for one graph the host spins K
 * times SPIN_NS then launches; split, it spins M times, launches the first graph, spins K - M
 * times, launches the second. The gap between two graphs on one stream is what splitting costs.
 *
 *   graph_split_probe FATBIN K M SPIN_NS CHAINS     (M = 0: one graph)
 *
 * Prints one JSON line: {"k", "m", "spin_ns", "total_us"} (median over CHAINS, 200 warm-up).
 */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/driver_setup.h"
#include "harness/programs.h" /* now_us, read_file, cmp_double */

static void spin_ns(double ns) {
  double end = now_us() + ns * 1e-3;
  while (now_us() < end) {
  }
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: %s FATBIN K M SPIN_NS CHAINS\n", argv[0]);
    return 2;
  }
  long K = atol(argv[2]), M = atol(argv[3]), chains = atol(argv[5]);
  double spin = atof(argv[4]);
  if (K < 2 || M < 0 || M >= K || chains < 2) return 2;
  size_t size = 0;
  void *blob = read_file(argv[1], &size);
  CUmodule cm = driver_setup(blob, NULL);
  CUfunction cfn;
  CUstream cs;
  CK(cuModuleGetFunction(&cfn, cm, "empty"));
  CK(cuStreamCreate(&cs, CU_STREAM_NON_BLOCKING));
  CUgraphExec whole = M ? NULL : driver_chain_exec(cfn, K);
  CUgraphExec a = M ? driver_chain_exec(cfn, M) : NULL, b = M ? driver_chain_exec(cfn, K - M) : NULL;
  double *total = malloc(sizeof(double) * (size_t)chains);
  if (!total) return 2;
  for (long c = -200; c < chains; ++c) {
    double t0 = now_us();
    if (!M) {
      spin_ns(spin * (double)K);
      CK(cuGraphLaunch(whole, cs));
    } else {
      spin_ns(spin * (double)M);
      CK(cuGraphLaunch(a, cs));
      spin_ns(spin * (double)(K - M));
      CK(cuGraphLaunch(b, cs));
    }
    CK(cuStreamSynchronize(cs));
    double t1 = now_us();
    if (c >= 0) total[c] = t1 - t0;
  }
  qsort(total, (size_t)chains, sizeof *total, cmp_double);
  double med = chains % 2 ? total[chains / 2] : 0.5 * (total[chains / 2 - 1] + total[chains / 2]);
  printf("{\"k\": %ld, \"m\": %ld, \"spin_ns\": %.0f, \"total_us\": %.3f}\n", K, M, spin, med);
  return 0;
}
