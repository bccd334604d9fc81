/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* stress.c - many threads using mgpu-cached at once (issue 4): loading the same and different
 * modules, creating and destroying streams and events, launching, synchronising.
 *
 *   stress THREADS ITERS BLOB...     BLOB: files holding the tests' kernels (kernels.ptx/.fatbin/.cubin)
 *
 * Each thread, on device (thread % STRESS_DEVICES) (default 1 device), ITERS times: loads every
 * blob from one buffer shared by all threads (must give the same module handle in every thread) and
 * from its own private copy (a module of its own), resolves `saxpy`, takes two streams and an
 * event, launches y += x on the first, records the event there, makes the second wait for it,
 * launches y += x on the second, then gives everything back and unloads. Every live stream or
 * event handle is entered in a table while it is held: a handle handed to two holders at once, a
 * NULL handle or a changing module handle is a failure. At the end each thread checks its y
 * (y0 + 2*ITERS*x, unless STRESS_NO_CHECK=1: the fake driver runs no kernel), and main checks the
 * library's counters: one driver load per distinct blob address and device, no error reported.
 * Prints "ok" and exits 0 on success.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../csrc/include/mgpu_abi.h"
int mgpu_cached_stats_count(void);
const char *mgpu_cached_stats_name(int i);
int mgpu_cached_stats_read(uint64_t *values, int n);

#define MAXB 8
#define MAXT 64
#define N 4096

static int g_threads, g_iters, g_nblobs, g_devices = 1, g_check = 1;
static unsigned char *g_blob[MAXB];
static size_t g_len[MAXB];
static void *g_module[MAXB]; /* first module handle seen per shared blob (atomic) */
static int g_failures;       /* atomic */

/* Handles held right now (streams and events), under g_held_lock. */
static pthread_mutex_t g_held_lock = PTHREAD_MUTEX_INITIALIZER;
static void *g_held[MAXT * 8];

static void fail(const char *what, long t) {
  __atomic_fetch_add(&g_failures, 1, __ATOMIC_RELAXED);
  fprintf(stderr, "stress: thread %ld: %s\n", t, what);
}

static void hold(void *h, long t) {
  if (!h) return fail("NULL handle", t);
  pthread_mutex_lock(&g_held_lock);
  int dup = 0, slot = -1;
  for (int i = 0; i < MAXT * 8; ++i) {
    if (g_held[i] == h) dup = 1;
    if (!g_held[i] && slot < 0) slot = i;
  }
  if (!dup && slot >= 0) g_held[slot] = h;
  pthread_mutex_unlock(&g_held_lock);
  if (dup) fail("a handle held by another holder was handed out again", t);
}

static void release(void *h) {
  pthread_mutex_lock(&g_held_lock);
  for (int i = 0; i < MAXT * 8; ++i)
    if (g_held[i] == h) {
      g_held[i] = NULL;
      break;
    }
  pthread_mutex_unlock(&g_held_lock);
}

static void *worker(void *arg) {
  long t = (long)arg;
  int dev = (int)(t % g_devices);
  mgpuSetDefaultDevice(dev);
  unsigned char *priv[MAXB];
  void *priv_module[MAXB] = {0};
  for (int b = 0; b < g_nblobs; ++b) {
    priv[b] = malloc(g_len[b]);
    memcpy(priv[b], g_blob[b], g_len[b]);
  }
  static __thread float x[N], y[N], out[N];
  for (int i = 0; i < N; ++i) {
    x[i] = (float)((i + t) % 7);
    y[i] = (float)(t % 5);
  }
  void *s0 = mgpuStreamCreate();
  hold(s0, t);
  float *dx = mgpuMemAlloc(sizeof x, s0, false), *dy = mgpuMemAlloc(sizeof y, s0, false);
  mgpuMemcpy(dx, x, sizeof x, s0);
  mgpuMemcpy(dy, y, sizeof y, s0);
  mgpuStreamSynchronize(s0);
  float a = 1.0f;
  int n = N;
  void *params[] = {&a, &dx, &dy, &n};
  for (int it = 0; it < g_iters; ++it) {
    void *mods[2 * MAXB];
    int nm = 0;
    for (int b = 0; b < g_nblobs; ++b) {
      void *m = mgpuModuleLoad(g_blob[b], g_len[b]);
      void *expected = NULL;
      if (!m) fail("shared module load failed", t);
      else if (!__atomic_compare_exchange_n(&g_module[b], &expected, m, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE) && expected != m)
        fail("a shared blob gave a different module in another thread", t);
      void *pm = mgpuModuleLoad(priv[b], g_len[b]);
      if (!pm || pm == m || (priv_module[b] && pm != priv_module[b]))
        fail("private module handle wrong", t);
      priv_module[b] = pm;
      mods[nm++] = m;
      mods[nm++] = pm;
    }
    void *f = mgpuModuleGetFunction(mods[(it + t) % nm], "saxpy");
    if (!f) fail("no function", t);
    void *s1 = mgpuStreamCreate();
    hold(s1, t);
    void *e = mgpuEventCreate();
    hold(e, t);
    mgpuLaunchKernel(f, N / 256, 1, 1, 256, 1, 1, 0, s1, params, NULL, 4);
    mgpuEventRecord(e, s1);
    void *s2 = mgpuStreamCreate();
    hold(s2, t);
    mgpuStreamWaitEvent(s2, e);
    mgpuLaunchKernel(f, N / 256, 1, 1, 256, 1, 1, 0, s2, params, NULL, 4);
    release(e);
    mgpuEventDestroy(e);
    mgpuStreamSynchronize(s2);
    release(s2);
    mgpuStreamDestroy(s2);
    mgpuStreamSynchronize(s1);
    release(s1);
    mgpuStreamDestroy(s1);
    for (int i = 0; i < nm; ++i) mgpuModuleUnload(mods[i]);
  }
  mgpuMemcpy(out, dy, sizeof out, s0);
  mgpuStreamSynchronize(s0);
  if (g_check)
    for (int i = 0; i < N; ++i)
      if (out[i] != y[i] + 2.0f * (float)g_iters * x[i]) {
        fail("wrong result", t);
        break;
      }
  mgpuMemFree(dx, s0);
  mgpuMemFree(dy, s0);
  release(s0);
  mgpuStreamDestroy(s0);
  /* private copies are kept until exit: a freed copy's address could be reused by another
   * thread's copy, which the cache would (correctly) treat as a replaced blob */
  return NULL;
}

static uint64_t stat(const char *name) {
  int n = mgpu_cached_stats_count();
  uint64_t v[128];
  mgpu_cached_stats_read(v, n < 128 ? n : 128);
  for (int i = 0; i < n && i < 128; ++i)
    if (!strcmp(mgpu_cached_stats_name(i), name)) return v[i];
  return (uint64_t)-1;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s THREADS ITERS BLOB...\n", argv[0]);
    return 2;
  }
  g_threads = atoi(argv[1]);
  g_iters = atoi(argv[2]);
  if (g_threads < 1 || g_threads > MAXT) return 2;
  if (getenv("STRESS_DEVICES")) g_devices = atoi(getenv("STRESS_DEVICES"));
  if (g_devices < 1) g_devices = 1;
  g_check = !getenv("STRESS_NO_CHECK");
  for (int i = 3; i < argc && g_nblobs < MAXB; ++i) {
    FILE *fp = fopen(argv[i], "rb");
    if (!fp) {
      perror(argv[i]);
      return 2;
    }
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    g_blob[g_nblobs] = calloc(1, (size_t)len + 1); /* + NUL: PTX text */
    if (fread(g_blob[g_nblobs], 1, (size_t)len, fp) != (size_t)len) return 2;
    fclose(fp);
    g_len[g_nblobs++] = (size_t)len + 1;
  }
  pthread_t th[MAXT];
  for (long t = 0; t < g_threads; ++t) pthread_create(&th[t], NULL, worker, (void *)t);
  for (int t = 0; t < g_threads; ++t) pthread_join(th[t], NULL);
  uint64_t loads = stat("driver_module_loads"), errors = stat("errors");
  /* the shared buffer's module: one driver load on each device used; each private copy's: one */
  uint64_t used = (uint64_t)(g_devices < g_threads ? g_devices : g_threads);
  uint64_t want = (uint64_t)g_nblobs * (used + (uint64_t)g_threads);
  printf("threads %d iters %d devices %d: driver_module_loads %llu (want %llu) launches %llu "
         "driver_stream_creates %llu driver_event_creates %llu errors %llu\n",
         g_threads, g_iters, g_devices, (unsigned long long)loads, (unsigned long long)want,
         (unsigned long long)stat("launches"), (unsigned long long)stat("driver_stream_creates"),
         (unsigned long long)stat("driver_event_creates"), (unsigned long long)errors);
  if (loads != want) fail("duplicate or missing module loads", -1);
  if (errors) fail("errors were reported", -1);
  if (stat("launches") != 2ull * g_threads * g_iters) fail("launches lost", -1);
  if (stat("live_streams") != 0 || stat("live_events") != 0) fail("handles not given back", -1);
  if (g_failures) {
    printf("%d failures\n", g_failures);
    return 1;
  }
  printf("ok\n");
  return 0;
}
