/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* large_loads.c - threads loading a large image (issue 21 item 5: its module-state scan runs on a
 * helper thread beside each driver load), for the sanitizers. Built with the library's sources
 * (tests/test_module_devices.py).
 *   large_loads BLOB THREADS ITERS KERNEL
 * Each thread, ITERS times: loads the blob from a private copy (a miss: a driver load and a scan
 * each time, with MGPU_CACHED_MODULE_CACHE=0), looks up KERNEL, unloads. Prints "ok". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mgpu_abi.h"

static unsigned char *g_blob;
static size_t g_len;
static int g_iters, g_failures;
static const char *g_kernel;

static void *worker(void *arg) {
  (void)arg;
  unsigned char *mine = malloc(g_len);
  memcpy(mine, g_blob, g_len);
  for (int i = 0; i < g_iters; ++i) {
    void *m = mgpuModuleLoad(mine, g_len);
    if (!m || !mgpuModuleGetFunction(m, g_kernel)) __atomic_fetch_add(&g_failures, 1, 0);
    if (m) mgpuModuleUnload(m);
  }
  free(mine);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 5) return 2;
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 2;
  g_blob = malloc(8 << 20);
  g_len = fread(g_blob, 1, 8 << 20, f);
  fclose(f);
  int threads = atoi(argv[2]);
  g_iters = atoi(argv[3]);
  g_kernel = argv[4];
  pthread_t t[16];
  for (int i = 0; i < threads && i < 16; ++i) pthread_create(&t[i], NULL, worker, NULL);
  for (int i = 0; i < threads && i < 16; ++i) pthread_join(t[i], NULL);
  free(g_blob);
  if (g_failures) return 1;
  puts("ok");
  return 0;
}
