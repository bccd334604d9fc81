/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* launch_path_cpu.c - the library's own host time per launch, from 1..N threads, with no GPU
 * (issue 21, threads): what each shape of MLIR code calls per launch, against a driver whose
 * per-launch entry points cost almost nothing (quick_driver.c over the fake of tests/drivers), so
 * what is timed is the library's work and where threads meet in it.
 *
 *   launch_path_cpu MODE BLOBFILE ITERS THREADS...
 *
 * MODE: launch (a function resolved once: mgpuLaunchKernel), get (mgpuModuleGetFunction +
 * mgpuLaunchKernel, LLVM >= 21 code), exe / heap (mgpuModuleLoad, mgpuModuleGetFunction,
 * mgpuLaunchKernel, mgpuModuleUnload, LLVM <= 20 code: the blob in this executable's .rodata,
 * linked between chain_blob_start and chain_blob_end as launch_path.sh assembles it, or read
 * from BLOBFILE onto the heap, where each hit compares its bytes). Each thread takes its own
 * stream; all threads share the blob (one module). Kernel: `empty`. The library is the one
 * linked (-lmgpu_cached), so another build can be preloaded in its place (LD_PRELOAD). Per
 * thread count, each thread runs ITERS iterations five times after a barrier; prints
 * "MODE THREADS ns" with ns the mean over threads of each thread's best time per iteration, and at
 * the end "stats launches N thread_hits N" (the library's counters: what ran is the path meant). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../csrc/include/mgpu_abi.h"
#include "../../csrc/include/mgpu_cached.h"

extern const char chain_blob_start[] __attribute__((weak));
extern const char chain_blob_end[] __attribute__((weak));
static int g_mode; /* 0 launch, 1 get, 2 load */
static const char *g_blob;
static size_t g_len;
static long g_iters;
static pthread_barrier_t g_bar;

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void *worker(void *arg) {
  double *best = arg;
  void *s = mgpuStreamCreate();
  void *m0 = mgpuModuleLoad((void *)g_blob, g_len);
  void *f0 = m0 ? mgpuModuleGetFunction(m0, "empty") : NULL;
  if (!s || !f0) {
    fprintf(stderr, "launch_path_cpu: set-up failed\n");
    exit(1);
  }
  *best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    pthread_barrier_wait(&g_bar);
    double t0 = now_ns();
    for (long i = 0; i < g_iters; ++i) {
      if (g_mode == 0) {
        mgpuLaunchKernel(f0, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL, 0);
      } else if (g_mode == 1) {
        mgpuLaunchKernel(mgpuModuleGetFunction(m0, "empty"), 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL, 0);
      } else {
        void *m = mgpuModuleLoad((void *)g_blob, g_len);
        mgpuLaunchKernel(mgpuModuleGetFunction(m, "empty"), 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL, 0);
        mgpuModuleUnload(m);
      }
    }
    double dt = (now_ns() - t0) / (double)g_iters;
    if (dt < *best) *best = dt;
  }
  mgpuStreamSynchronize(s);
  mgpuStreamDestroy(s);
  mgpuModuleUnload(m0);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s launch|get|exe|heap BLOBFILE ITERS THREADS...\n", argv[0]);
    return 2;
  }
  const char *mode = argv[1];
  g_mode = !strcmp(mode, "launch") ? 0 : !strcmp(mode, "get") ? 1 : 2;
  if (!strcmp(mode, "exe")) {
    if (!chain_blob_start || !chain_blob_end) return 2;
    g_blob = chain_blob_start;
    g_len = (size_t)(chain_blob_end - chain_blob_start);
  } else {
    FILE *f = fopen(argv[2], "rb");
    if (!f) return 2;
    fseek(f, 0, SEEK_END);
    g_len = (size_t)ftell(f);
    rewind(f);
    char *b = aligned_alloc(64, (g_len + 64) & ~(size_t)63);
    if (!b || fread(b, 1, g_len, f) != g_len) return 2;
    fclose(f);
    g_blob = b;
  }
  g_iters = atol(argv[3]);
  for (int a = 4; a < argc; ++a) {
    int n = atoi(argv[a]);
    pthread_t t[64];
    double best[64], sum = 0;
    if (n < 1 || n > 64) return 2;
    pthread_barrier_init(&g_bar, NULL, (unsigned)n);
    for (int i = 0; i < n; ++i) pthread_create(&t[i], NULL, worker, &best[i]);
    for (int i = 0; i < n; ++i) {
      pthread_join(t[i], NULL);
      sum += best[i];
    }
    pthread_barrier_destroy(&g_bar);
    printf("%s %d %.1f\n", mode, n, sum / n);
    fflush(stdout);
  }
  uint64_t v[512];
  int nstats = mgpu_cached_stats_read(v, 512);
  unsigned long long launches = 0, hits = 0;
  for (int i = 0; i < nstats; ++i) {
    if (!strcmp(mgpu_cached_stats_name(i), "launches")) launches = v[i];
    if (!strcmp(mgpu_cached_stats_name(i), "module_thread_hits")) hits = v[i];
  }
  printf("stats launches %llu thread_hits %llu\n", launches, hits);
  return 0;
}
