/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* sync_pair_probe.c - one library per process: ITERS pairs of mgpuMemAlloc(BYTES, NULL, host_shared)
 * + mgpuMemFree(p, NULL), timed after 20 warm-up pairs; prints "BYTES us_per_pair". With
 * MGPU_CACHED_STATS=1 the library prints its counters at exit (which driver calls the pairs made).
 * Run N101 found the untouched 256 B host_shared pair 1.48x stock inside alloc_pair_bench (five
 * copies of the library in one process) while 4 KiB was 1.05x; this asks the same of one copy alone.
 *
 *   sync_pair_probe HOST_SHARED(0|1) ITERS BYTES...
 * Build: cc -O2 sync_pair_probe.c $(python3 -m mgpu_cached --ldflags)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void *mgpuMemAlloc(uint64_t bytes, void *stream, _Bool host_shared);
void mgpuMemFree(void *p, void *stream);

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s HOST_SHARED ITERS BYTES...\n", argv[0]);
    return 2;
  }
  int hs = atoi(argv[1]), iters = atoi(argv[2]);
  for (int a = 3; a < argc; ++a) {
    uint64_t bytes = strtoull(argv[a], NULL, 0);
    for (int i = 0; i < 20; ++i) mgpuMemFree(mgpuMemAlloc(bytes, NULL, hs), NULL);
    double t0 = now_us();
    for (int i = 0; i < iters; ++i) {
      void *p = mgpuMemAlloc(bytes, NULL, hs);
      if (!p) {
        fprintf(stderr, "allocation of %llu failed\n", (unsigned long long)bytes);
        return 1;
      }
      mgpuMemFree(p, NULL);
    }
    printf("%llu %.2f\n", (unsigned long long)bytes, (now_us() - t0) / iters);
  }
  return 0;
}
