/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* conc_harness.c - runs the concurrency test programs of conc.mlir (conc_llvm19.o / conc_llvm22.o).
 *
 *   conc_harness spin LIMIT     spin_pair: prints "spin POLLS0 POLLS1 LIMIT"; exit 3 if a kernel
 *                               timed out (polled LIMIT times without seeing the other start)
 *   conc_harness long N REPS    long_one and long_pair, REPS times each (after a warm-up), prints the
 *                               median wall time of each and their ratio (pair / one)
 *   conc_harness token N        token_loop(N): prints acc[0], exit 4 unless it is N
 *   conc_harness join N         join_loop(N): prints acc, exit 4 unless it is {N, N, N(N+1)} mod 2^32
 *                               (token and join run their loop in calls of at most 10000 iterations)
 *
 * HARNESS_NO_CHECK=1 skips the result checks (for the fake driver, which runs no kernel).
 * Prints "ok" last on success.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../../csrc/include/mgpu_abi.h"

typedef struct { int32_t *allocated, *aligned; int64_t offset, sizes[1], strides[1]; } MemRefI32;
void _mlir_ciface_spin_pair(MemRefI32 *flags, MemRefI32 *out, int32_t limit);
void _mlir_ciface_long_pair(MemRefI32 *out, int32_t n);
void _mlir_ciface_long_one(MemRefI32 *out, int32_t n);
void _mlir_ciface_token_loop(MemRefI32 *acc, int64_t n);
void _mlir_ciface_join_loop(MemRefI32 *acc, int64_t n);

static void *g_s;

static MemRefI32 dev_buffer(int64_t n) {
  int32_t *p = mgpuMemAlloc((uint64_t)n * 4, g_s, false);
  mgpuMemset32(p, 0, (size_t)n, g_s);
  mgpuStreamSynchronize(g_s);
  MemRefI32 m = {p, p, 0, {n}, {1}};
  return m;
}

static void read_back(int32_t *host, MemRefI32 *m) {
  mgpuMemcpy(host, m->aligned, (size_t)m->sizes[0] * 4, g_s);
  mgpuStreamSynchronize(g_s);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s spin LIMIT | long N REPS | token N | join N\n", argv[0]);
    return 2;
  }
  int check = !getenv("HARNESS_NO_CHECK");
  long n = atol(argv[2]);
  g_s = mgpuStreamCreate();
  int rc = 0;
  if (!strcmp(argv[1], "spin")) {
    MemRefI32 flags = dev_buffer(2), out = dev_buffer(2);
    _mlir_ciface_spin_pair(&flags, &out, (int32_t)n);
    int32_t h[2];
    read_back(h, &out);
    printf("spin %d %d %ld\n", h[0], h[1], n);
    if (check && (h[0] >= n || h[1] >= n)) {
      printf("timed out: the two kernels did not run at the same time\n");
      rc = 3;
    }
  } else if (!strcmp(argv[1], "long")) {
    int reps = argc > 3 ? atoi(argv[3]) : 5;
    if (reps < 1 || reps > 100) reps = 5;
    MemRefI32 out = dev_buffer(2);
    double one[100], pair[100];
    _mlir_ciface_long_one(&out, (int32_t)n); /* warm-up */
    _mlir_ciface_long_pair(&out, (int32_t)n);
    for (int r = 0; r < reps; ++r) { /* interleaved */
      double t0 = now();
      _mlir_ciface_long_one(&out, (int32_t)n);
      double t1 = now();
      _mlir_ciface_long_pair(&out, (int32_t)n);
      double t2 = now();
      one[r] = t1 - t0;
      pair[r] = t2 - t1;
    }
    qsort(one, (size_t)reps, sizeof *one, cmp);
    qsort(pair, (size_t)reps, sizeof *pair, cmp);
    int32_t h[2];
    read_back(h, &out);
    printf("long n=%ld reps=%d one_ms=%.2f pair_ms=%.2f pair/one=%.2f\n", n, reps,
           one[reps / 2] * 1e3, pair[reps / 2] * 1e3, pair[reps / 2] / one[reps / 2]);
    if (check && h[0] != h[1]) {
      printf("different results %d %d\n", h[0], h[1]);
      rc = 4;
    }
  } else if (!strcmp(argv[1], "token") || !strcmp(argv[1], "join")) {
    int join = argv[1][0] == 'j';
    MemRefI32 acc = dev_buffer(3);
    /* In chunks: the generated loop allocas its kernel arguments per iteration (no stack restore),
     * so a million iterations in one call would overflow the stack. */
    for (long done = 0; done < n;) {
      long k = n - done < 10000 ? n - done : 10000;
      if (join)
        _mlir_ciface_join_loop(&acc, k);
      else
        _mlir_ciface_token_loop(&acc, k);
      done += k;
    }
    int32_t h[3];
    read_back(h, &acc);
    uint32_t want2 = (uint32_t)n * (uint32_t)(n + 1);
    printf("%s %d %d %d\n", argv[1], h[0], h[1], h[2]);
    if (check && (h[0] != n || (join && (h[1] != n || (uint32_t)h[2] != want2)))) {
      printf("wrong result\n");
      rc = 4;
    }
  } else {
    fprintf(stderr, "unknown command %s\n", argv[1]);
    return 2;
  }
  mgpuStreamDestroy(g_s);
  if (!rc) printf("ok\n");
  return rc;
}
