/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* churn.c - modules retired and their slots reused while other threads use handles lock-free:
 * built with AddressSanitizer (or ThreadSanitizer) by the tests, so a read of freed memory or a
 * data race fails them.
 *
 *   churn THREADS ITERS      (run with MGPU_CACHED_MODULE_CACHE=0: every last unload retires)
 *
 * Worker threads, ITERS times: load one of 4 blobs (distinct addresses), get its kernel, launch it,
 * unload it, and keep the handles. A "late" thread meanwhile calls mgpuModuleGetFunction and
 * mgpuLaunchKernel on handles the workers have already given up (stale, or live again if the same
 * blob happens to be loaded: both are fine; a crash or a sanitizer report is not). Prints "ok".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "mgpu_abi.h"

#define NB 4
#define KEEP 64
static char g_blob[NB][256];
static int g_iters;
static void *g_mods[KEEP], *g_funcs[KEEP]; /* handles given up by the workers; atomic slots */
static int g_done;                          /* atomic */
static long g_bad;                          /* atomic: a load or get that failed */

static void *worker(void *arg) {
  long id = (long)arg;
  for (int i = 0; i < g_iters; ++i) {
    int b = (int)((id + i) % NB);
    char name[8];
    snprintf(name, sizeof name, "k%d", b);
    void *m = mgpuModuleLoad(g_blob[b], 0);
    void *f = mgpuModuleGetFunction(m, name);
    if (!m || !f) __atomic_add_fetch(&g_bad, 1, __ATOMIC_RELAXED);
    mgpuLaunchKernel(f, 1, 1, 1, 1, 1, 1, (i % 3) * 1024, NULL, NULL, NULL, 0);
    mgpuModuleUnload(m);
    __atomic_store_n(&g_mods[(id * 7 + i) % KEEP], m, __ATOMIC_RELAXED);
    __atomic_store_n(&g_funcs[(id * 7 + i) % KEEP], f, __ATOMIC_RELAXED);
  }
  return NULL;
}

static void *late(void *arg) {
  (void)arg;
  for (unsigned i = 0; !__atomic_load_n(&g_done, __ATOMIC_RELAXED); ++i) {
    void *m = __atomic_load_n(&g_mods[i % KEEP], __ATOMIC_RELAXED);
    void *f = __atomic_load_n(&g_funcs[(i * 13) % KEEP], __ATOMIC_RELAXED);
    if (m) mgpuModuleGetFunction(m, "k0");
    if (f) mgpuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 2048, NULL, NULL, NULL, 0);
  }
  return NULL;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 4;
  g_iters = argc > 2 ? atoi(argv[2]) : 500;
  for (int b = 0; b < NB; ++b)
    snprintf(g_blob[b], sizeof g_blob[b],
             "//\n.version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k%d(\n)\n{\n ret;\n}\n", b);
  pthread_t t[64], l;
  pthread_create(&l, NULL, late, NULL);
  for (long i = 0; i < threads && i < 64; ++i) pthread_create(&t[i], NULL, worker, (void *)i);
  for (long i = 0; i < threads && i < 64; ++i) pthread_join(t[i], NULL);
  __atomic_store_n(&g_done, 1, __ATOMIC_RELAXED);
  pthread_join(l, NULL);
  if (g_bad) {
    printf("%ld loads or lookups failed\n", g_bad);
    return 1;
  }
  printf("ok\n");
  return 0;
}
