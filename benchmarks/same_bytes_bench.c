/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* same_bytes_bench.c - the cost of the comparison a cache hit on a heap blob makes: memcmp against
 * the library's mc_same_bytes (csrc/support/same_bytes.c, compiled in), for a blob and its copy at
 * the same offset within 64 bytes (as mc_copy_alloc_like lays copies out) and at different ones.
 *
 *   same_bytes_bench SIZE...
 *
 * Prints one line per size and layout: ns per comparison (the fastest of 200 rounds of 100) for
 * memcmp and for mc_same_bytes, and which comparison mc_same_bytes uses on this CPU.
 * Build: cc -O2 -std=c11 -D_GNU_SOURCE -Icsrc benchmarks/same_bytes_bench.c csrc/support/same_bytes.c
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/programs.h" /* now_us */
#include "support/same_bytes.h"

static double per_compare_ns(int lib, const unsigned char *a, const unsigned char *b, size_t n) {
  double best = 1e30;
  for (int r = 0; r < 200; ++r) {
    double t0 = now_us();
    int same = 0;
    for (int k = 0; k < 100; ++k) {
      same += lib ? mc_same_bytes(a, b, n) : memcmp(a, b, n) == 0;
      __asm__ volatile("" : : "r"(a), "r"(b) : "memory");
    }
    double t = now_us() - t0;
    if (same != 100) return -1;
    if (t < best) best = t;
  }
  return best * 10.0; /* µs per 100 -> ns per comparison */
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s SIZE...\n", argv[0]);
    return 2;
  }
  printf("mc_same_bytes here: %s\n", mc_same_bytes_kind());
  static const int layout[][2] = {{16, 16}, {0, 0}, {16, 48}, {0, 32}};
  for (int i = 1; i < argc; ++i) {
    size_t n = (size_t)atol(argv[i]);
    unsigned char *x = aligned_alloc(64, n + 128), *y = aligned_alloc(64, n + 128);
    if (!n || !x || !y) return 2;
    for (size_t j = 0; j < 4; ++j) {
      unsigned char *a = x + layout[j][0], *b = y + layout[j][1];
      for (size_t k = 0; k < n; ++k) a[k] = b[k] = (unsigned char)(k * 131 + 7);
      double m = per_compare_ns(0, a, b, n), s = per_compare_ns(1, a, b, n);
      if (m < 0 || s < 0) return 1;
      printf("size %zu offsets %d/%d: memcmp %.1f ns, mc_same_bytes %.1f ns (%.2fx)\n", n,
             layout[j][0], layout[j][1], m, s, s / m);
    }
    free(x);
    free(y);
  }
  return 0;
}
