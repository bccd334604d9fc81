/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* rodata_cost.c - what the loader queries of the hit check cost (csrc/support/rodata.c): ns per
 * mc_rodata_generation() (dl_iterate_phdr stopped at the first object: the loader's list lock and
 * one callback), also with two threads checking at once (the lock is shared), and per
 * mc_rodata_find() of a blob in the last object loaded (a walk of every object's program headers),
 * with the number of objects loaded. Built and run by verify_cost.py:
 *   cc -O2 -D_GNU_SOURCE -pthread -Icsrc benchmarks/rodata_cost.c csrc/support/rodata.c -ldl -o rodata_cost
 *   ./rodata_cost LIBRARY_WITH_mc_bench_blob BLOB_BYTES
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "support/rodata.h"

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int count_object(struct dl_phdr_info *info, size_t size, void *data) {
  (void)info, (void)size;
  ++*(int *)data;
  return 0;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

enum { N = 1000000, RUNS = 5 };

static void *check_loop(void *arg) {
  uint64_t sink = 0;
  for (int i = 0; i < N; ++i) sink += mc_rodata_generation();
  *(uint64_t *)arg = sink;
  return NULL;
}

/* ns per check with two threads checking at once (wall time of both / N). */
static double two_threads(void) {
  pthread_t t[2];
  uint64_t sink[2];
  double t0 = now_ns();
  for (int i = 0; i < 2; ++i) pthread_create(&t[i], NULL, check_loop, &sink[i]);
  for (int i = 0; i < 2; ++i) pthread_join(t[i], NULL);
  return (now_ns() - t0) / N;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  const void *blob = h ? dlsym(h, "mc_bench_blob") : NULL;
  size_t len = strtoull(argv[2], NULL, 10);
  if (!blob) {
    fprintf(stderr, "%s\n", dlerror());
    return 1;
  }
  int objects = 0;
  dl_iterate_phdr(count_object, &objects);
  if (!mc_rodata_find(blob, len, NULL, 0)) {
    fprintf(stderr, "blob not found in a read-only segment\n");
    return 1;
  }
  double gen[RUNS], find[RUNS], gen2[RUNS];
  volatile uint64_t sink = 0;
  for (int r = 0; r < RUNS; ++r) {
    double t0 = now_ns();
    for (int i = 0; i < N; ++i) sink += mc_rodata_generation();
    gen[r] = (now_ns() - t0) / N;
    t0 = now_ns();
    for (int i = 0; i < N / 10; ++i) sink += mc_rodata_find(blob, len, NULL, 0);
    find[r] = (now_ns() - t0) / (N / 10);
    gen2[r] = two_threads();
  }
  qsort(gen, RUNS, sizeof *gen, cmp);
  qsort(find, RUNS, sizeof *find, cmp);
  qsort(gen2, RUNS, sizeof *gen2, cmp);
  printf("%d objects loaded: %.1f ns per generation check (dl_iterate_phdr, first object; "
         "%.1f ns per check of each of two threads checking at once), %.1f ns per walk finding "
         "the blob (mc_rodata_find)\n",
         objects, gen[RUNS / 2], gen2[RUNS / 2], find[RUNS / 2]);
  return 0;
}
