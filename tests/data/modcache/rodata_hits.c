/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* rodata_hits.c - cache hits on a blob in a shared library's .rodata (not compared while no object
 * is loaded or unloaded) racing with another thread's dlopen and dlclose of an unrelated library
 * (each makes the next hits compare and record a new generation): built with ThreadSanitizer (or
 * AddressSanitizer) by the tests, so a data race on the recorded generation fails them.
 *
 *   rodata_hits LIBBLOB LIBOTHER THREADS ITERS
 *
 * LIBBLOB exports mc_test_blob (a PTX blob with the kernel k_rodata). Worker threads, ITERS times:
 * load the blob, check that the module is the one of the first load, launch its kernel, unload.
 * Then, alone: one more dlopen, and two more hits (the first compares, the second does not).
 * Prints the number of dlopen/dlclose rounds and "ok".
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "mgpu_abi.h"

static const void *g_blob;
static void *g_module, *g_function; /* of the first load; written before the threads start */
static const char *g_other;
static int g_iters;
static int g_done;  /* atomic */
static long g_bad;  /* atomic: a hit that returned another module, or failed */
static long g_rounds;

static void *worker(void *arg) {
  (void)arg;
  for (int i = 0; i < g_iters; ++i) {
    void *m = mgpuModuleLoad(g_blob, 0);
    if (m != g_module) __atomic_add_fetch(&g_bad, 1, __ATOMIC_RELAXED);
    void *f = mgpuModuleGetFunction(m, "k_rodata");
    if (f != g_function) __atomic_add_fetch(&g_bad, 1, __ATOMIC_RELAXED);
    mgpuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL, 0);
    mgpuModuleUnload(m);
  }
  return NULL;
}

static void *churn(void *arg) {
  (void)arg;
  while (!__atomic_load_n(&g_done, __ATOMIC_RELAXED)) {
    void *h = dlopen(g_other, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      fprintf(stderr, "dlopen %s: %s\n", g_other, dlerror());
      exit(1);
    }
    dlclose(h);
    g_rounds++;
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 5) return 2;
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  g_blob = lib ? dlsym(lib, "mc_test_blob") : NULL;
  if (!g_blob) {
    fprintf(stderr, "%s\n", dlerror());
    return 1;
  }
  g_other = argv[2];
  int threads = atoi(argv[3]);
  g_iters = atoi(argv[4]);
  g_module = mgpuModuleLoad(g_blob, 0);
  g_function = mgpuModuleGetFunction(g_module, "k_rodata");
  if (!g_module || !g_function) return 1;
  pthread_t c, t[16];
  if (threads > 16) threads = 16;
  pthread_create(&c, NULL, churn, NULL);
  for (int i = 0; i < threads; ++i) pthread_create(&t[i], NULL, worker, NULL);
  for (int i = 0; i < threads; ++i) pthread_join(t[i], NULL);
  __atomic_store_n(&g_done, 1, __ATOMIC_RELAXED);
  pthread_join(c, NULL);
  void *h = dlopen(g_other, RTLD_NOW | RTLD_LOCAL);
  for (int i = 0; i < 2; ++i) {
    void *m = mgpuModuleLoad(g_blob, 0);
    if (m != g_module) g_bad++;
    mgpuModuleUnload(m);
  }
  if (h) dlclose(h);
  if (g_bad) {
    printf("%ld hits returned another module\n", g_bad);
    return 1;
  }
  printf("%ld dlopen/dlclose rounds\nok\n", g_rounds);
  return 0;
}
