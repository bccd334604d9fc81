/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* sync_pair_probe.c - one library per process: ITERS pairs of mgpuMemAlloc(BYTES, NULL, host_shared)
 * + mgpuMemFree(p, NULL), timed after 20 warm-up pairs; prints "BYTES us_per_pair". With
 * MGPU_CACHED_STATS=1 the library prints its counters at exit (which driver calls the pairs made).
 * Run N101 found the untouched 256 B host_shared pair 1.48x stock inside alloc_pair_bench (five
 * copies of the library in one process) while 4 KiB was 1.05x; this asks the same of one copy
 * alone, and of the patterns around it:
 *
 *   sync_pair_probe HOST_SHARED(0|1) ITERS BYTES... [MODE]
 *
 * MODE (a last argument that is not a number): plain (default: nothing between alloc and free);
 * primed (plain, after one pair whose block an mgpuMemset32 touched: the cache may hold a block
 * of the class); alternate (every other pair touched); touched (every pair). A touched pair's
 * memset goes on a stream of the library's (mgpuStreamCreate, made once), synchronised before
 * the free, the same calls for every library.
 * Build: cc -O2 sync_pair_probe.c $(python3 -m mgpu_cached --ldflags)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../csrc/include/mgpu_abi.h"
#include "harness/programs.h" /* now_us */

static void *g_stream;

static int pair(uint64_t bytes, int hs, int touch) {
  void *p = mgpuMemAlloc(bytes, NULL, hs);
  if (!p) {
    fprintf(stderr, "allocation of %llu failed\n", (unsigned long long)bytes);
    return 1;
  }
  if (touch) {
    mgpuMemset32(p, 7u, (size_t)(bytes / 4), g_stream);
    mgpuStreamSynchronize(g_stream);
  }
  mgpuMemFree(p, NULL);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s HOST_SHARED ITERS BYTES... [plain|primed|alternate|touched]\n",
            argv[0]);
    return 2;
  }
  int hs = atoi(argv[1]), iters = atoi(argv[2]), last = argc;
  const char *mode = "plain";
  if (argv[argc - 1][0] < '0' || argv[argc - 1][0] > '9') mode = argv[--last];
  int primed = !strcmp(mode, "primed"), alternate = !strcmp(mode, "alternate"),
      touched = !strcmp(mode, "touched");
  g_stream = mgpuStreamCreate();
  for (int a = 3; a < last; ++a) {
    uint64_t bytes = strtoull(argv[a], NULL, 0);
    for (int i = 0; i < 20; ++i)
      if (pair(bytes, hs, touched || (alternate && i % 2))) return 1;
    if (primed && pair(bytes, hs, 1)) return 1;
    double t0 = now_us();
    for (int i = 0; i < iters; ++i)
      if (pair(bytes, hs, touched || (alternate && i % 2))) return 1;
    printf("%llu %.2f\n", (unsigned long long)bytes, (now_us() - t0) / iters);
  }
  return 0;
}
