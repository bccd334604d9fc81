/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
 * alloc_driver_probe.c - what the driver's own small alloc + free pair costs, and on what it
 * depends (issue 21 item 3: stock's device pair measured 3.6 µs on one H100 machine, run M3,
 * and 58 µs on another, run N1). Per size, medians of R rounds of 200 pairs, µs per pair:
 *   alone       cuMemAlloc + cuMemFree with nothing else of the kind allocated
 *   small_live  the same while one 256 B block of the same kind stays allocated
 *   big_live    the same while one 64 MiB block of the same kind stays allocated
 * for device memory (cuMemAlloc) and managed memory (cuMemAllocManaged, attach global).
 * The driver is loaded at run time (no CUDA headers needed).
 *   cc -O2 -Ibenchmarks -o probe benchmarks/alloc_driver_probe.c -ldl; ./probe [ROUNDS] */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness/dl_probe.h"

static fn_t g_alloc, g_managed, g_free;

static int get(int managed, uint64_t *p, size_t n) {
  return managed ? g_managed(p, n, 1u) : g_alloc(p, n);
}
/* µs per pair, 200 pairs; -1 on a driver error */
static double pairs(int managed, size_t n) {
  double t0 = now_us();
  for (int i = 0; i < 200; ++i) {
    uint64_t p = 0;
    if (get(managed, &p, n) || g_free(p)) return -1.0;
  }
  return (now_us() - t0) / 200.0;
}
int main(int argc, char **argv) {
  int R = argc > 1 ? atoi(argv[1]) : 7;
  if (R < 1 || R > 101) R = 7;
  void *cu = dlopen("libcuda.so.1", RTLD_NOW);
  if (!cu) { fprintf(stderr, "no libcuda.so.1\n"); return 3; }
  fn_t init, devget, retain, setcur;
  PROBE_SYM(init, "cuInit"); PROBE_SYM(devget, "cuDeviceGet");
  PROBE_SYM(retain, "cuDevicePrimaryCtxRetain");
  PROBE_SYM(setcur, "cuCtxSetCurrent"); PROBE_SYM(g_alloc, "cuMemAlloc_v2");
  PROBE_SYM(g_managed, "cuMemAllocManaged");
  PROBE_SYM(g_free, "cuMemFree_v2");
  int dev = 0;
  void *ctx = NULL;
  if (init(0) || devget(&dev, 0) || retain(&ctx, dev) || setcur(ctx)) return 4;
  static const size_t sizes[] = {256,       4096,      65536,     128u << 10, 512u << 10,
                                 1u << 20, 2u << 20, 4u << 20, 8u << 20};
  printf("driver alloc + free pair, us (median of %d x 200 pairs)\n", R);
  printf("%-8s %9s %10s %11s %10s\n", "kind", "bytes", "alone", "small_live", "big_live");
  for (int managed = 0; managed < 2; ++managed)
    for (unsigned s = 0; s < sizeof sizes / sizeof *sizes; ++s) {
      double t[3][101];
      for (int r = 0; r < R; ++r)
        for (int m = 0; m < 3; ++m) { /* interleaved */
          uint64_t keep = 0;
          if (m && get(managed, &keep, m == 1 ? 256 : (64u << 20))) return 5;
          pairs(managed, sizes[s]); /* warm */
          t[m][r] = pairs(managed, sizes[s]);
          if (keep) g_free(keep);
        }
      printf("%-8s %9zu %10.2f %11.2f %10.2f\n", managed ? "managed" : "device", sizes[s],
             probe_median(t[0], R), probe_median(t[1], R), probe_median(t[2], R));
    }
  return 0;
}
