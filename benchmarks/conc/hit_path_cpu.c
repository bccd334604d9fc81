/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* hit_path_cpu.c - the host cost of what LLVM <= 20 code calls around every launch
 * (mgpuModuleLoad, mgpuModuleGetFunction, mgpuModuleUnload) on a cached module, from 1..N threads,
 * with no GPU: against the fake driver of tests/drivers (issue 21, the module cache's hit path).
 *
 *   hit_path_cpu LIB BLOBFILE[:KERNEL] ITERS THREADS...      (KERNEL: default k)
 *
 * LIB: a libmgpu_cached.so (dlopened, so two builds can be compared in one run); the driver is the
 * one MGPU_CACHED_CUDA_DRIVER names (the fake: no launch is made, so only the library's own work is
 * timed; with the real driver, the same work against it, still without a launch). BLOBFILE is read
 * once onto the heap, so every hit compares its bytes,
 * and all threads share it (one module, as a program's threads share its blob); they wait at a
 * barrier, then each runs ITERS load + look-up + unload triples. Prints "THREADS ns_per_triple" (wall time / ITERS: the time one
 * thread's triple takes while the others run theirs) per thread count.
 * Build: cc -O2 -pthread hit_path_cpu.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *(*load)(void *, size_t);
static void *(*get)(void *, const char *);
static void (*unload)(void *);
static unsigned char *g_blob;
static size_t g_len;
static long g_iters;
static const char *g_kernel = "k";
static pthread_barrier_t g_start;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *worker(void *arg) {
  (void)arg;
  pthread_barrier_wait(&g_start);
  for (long i = 0; i < g_iters; ++i) {
    void *m = load(g_blob, g_len);
    if (!m || !get(m, g_kernel)) {
      fprintf(stderr, "hit_path_cpu: load or look-up failed\n");
      exit(1);
    }
    unload(m);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s LIB BLOBFILE ITERS THREADS...\n", argv[0]);
    return 2;
  }
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) return fprintf(stderr, "%s\n", dlerror()), 2;
  *(void **)&load = dlsym(lib, "mgpuModuleLoad");
  *(void **)&get = dlsym(lib, "mgpuModuleGetFunction");
  *(void **)&unload = dlsym(lib, "mgpuModuleUnload");
  char *colon = strrchr(argv[2], ':');
  if (colon) {
    *colon = 0;
    g_kernel = colon + 1;
  }
  FILE *f = fopen(argv[2], "rb");
  if (!f || !load || !get || !unload) return fprintf(stderr, "bad arguments\n"), 2;
  fseek(f, 0, SEEK_END);
  g_len = (size_t)ftell(f);
  rewind(f);
  g_blob = malloc(g_len + 1);
  if (fread(g_blob, 1, g_len, f) != g_len) return 2;
  g_blob[g_len] = 0;
  fclose(f);
  g_iters = atol(argv[3]);
  void *m = load(g_blob, g_len); /* the miss and the first look-up, outside the timing */
  if (!m || !get(m, g_kernel)) return fprintf(stderr, "set-up failed\n"), 1;
  for (int a = 4; a < argc; ++a) {
    int n = atoi(argv[a]);
    pthread_t t[64];
    if (n < 1 || n > 64) return 2;
    pthread_barrier_init(&g_start, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; ++i) pthread_create(&t[i], NULL, worker, NULL);
    pthread_barrier_wait(&g_start);
    double t0 = now();
    for (int i = 0; i < n; ++i) pthread_join(t[i], NULL);
    double dt = now() - t0;
    pthread_barrier_destroy(&g_start);
    printf("%d %.1f\n", n, dt * 1e9 / (double)g_iters);
  }
  return 0;
}
