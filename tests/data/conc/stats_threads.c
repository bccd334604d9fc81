/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* stats_threads.c - the library's counters under threads (issue 21): per-thread counter blocks
 * (csrc/support/stats.h) must sum exactly, also over threads that exited, blocks taken over by
 * later threads, and across fork.
 *
 *   stats_threads WAVES THREADS LAUNCHES
 *
 * Built together with the library's sources (it reads stats.h's internals). WAVES times, THREADS
 * threads start, each takes a stream, makes LAUNCHES launches, LAUNCHES/10 module load + unload
 * pairs and one function lookup each, destroys its stream and exits; the next wave's threads take
 * over the exited threads' blocks. Checks, after each wave: every counter equals what the program
 * did (launches, module_loads, module_unloads, function_lookups, stream_creates,
 * stream_destroys, live_streams 0), no per-launch counter went to a shared word
 * (mc_stats_shared), the blocks made stay at most THREADS + 1 (main's). Then forks: the child
 * (one thread) counts on from the sum, its new threads take over the parent's blocks, its
 * statistics file counts only the child's work (checked by the test). Prints "ok" from each
 * process that passed ("child ok" first); exits 0 when both did.
 */

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mgpu_abi.h"
#include "mgpu_cached.h"
#include "support/stats.h"

static const char PTX[] =
    "//\n.version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(\n)\n{\n ret;\n}\n";

static long g_launches;
static void *g_function;
static int g_failures;

#define CHECK(c)                                                                                  \
  do {                                                                                            \
    if (!(c)) {                                                                                   \
      printf("check failed: %s (line %d)\n", #c, __LINE__);                                      \
      g_failures++;                                                                               \
    }                                                                                             \
  } while (0)

static void *worker(void *arg) {
  (void)arg;
  void *s = mgpuStreamCreate();
  for (long i = 0; i < g_launches; ++i) {
    mgpuLaunchKernel(g_function, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL, 0);
    if (i % 10 == 0) {
      void *m = mgpuModuleLoad((void *)PTX, sizeof PTX);
      if (i == 0) (void)mgpuModuleGetFunction(m, "k");
      mgpuModuleUnload(m);
    }
  }
  mgpuStreamDestroy(s);
  return NULL;
}

/* Run `waves` waves of `threads` workers; the expected counters grow by what they did. */
static void run(int waves, int threads, uint64_t *exp) {
  for (int w = 0; w < waves; ++w) {
    pthread_t th[64];
    for (int t = 0; t < threads; ++t) pthread_create(&th[t], NULL, worker, NULL);
    for (int t = 0; t < threads; ++t) pthread_join(th[t], NULL);
    exp[MC_STAT_launches] += (uint64_t)threads * (uint64_t)g_launches;
    exp[MC_STAT_module_loads] += (uint64_t)threads * (uint64_t)((g_launches + 9) / 10);
    exp[MC_STAT_module_unloads] += (uint64_t)threads * (uint64_t)((g_launches + 9) / 10);
    exp[MC_STAT_function_lookups] += (uint64_t)threads;
    exp[MC_STAT_stream_creates] += (uint64_t)threads;
    exp[MC_STAT_stream_destroys] += (uint64_t)threads;
    uint64_t got[MC_STAT_COUNT];
    int n = mgpu_cached_stats_read(got, MC_STAT_COUNT);
    CHECK(n == MC_STAT_COUNT);
    static const mc_stat_id ids[] = {MC_STAT_launches,        MC_STAT_module_loads,
                                     MC_STAT_module_unloads,  MC_STAT_function_lookups,
                                     MC_STAT_stream_creates,  MC_STAT_stream_destroys};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; ++i) {
      if (got[ids[i]] != exp[ids[i]])
        printf("%s: %llu, expected %llu\n", mgpu_cached_stats_name(ids[i]),
               (unsigned long long)got[ids[i]], (unsigned long long)exp[ids[i]]);
      CHECK(got[ids[i]] == exp[ids[i]]);
    }
    CHECK(got[MC_STAT_live_streams] == 0);
    CHECK(got[MC_STAT_errors] == 0);
    CHECK(mc_stats_blocks() <= threads + 1); /* exited threads' blocks were taken over */
    /* per-launch counters live in the threads' blocks, never in a shared word */
    CHECK(mc_stats_shared[MC_STAT_launches] == 0 && mc_stats_shared[MC_STAT_module_loads] == 0 &&
          mc_stats_shared[MC_STAT_module_hits] == 0 && mc_stats_shared[MC_STAT_function_lookups] == 0);
  }
}

int main(int argc, char **argv) {
  if (argc < 4) return 2;
  int waves = atoi(argv[1]), threads = atoi(argv[2]);
  g_launches = atol(argv[3]);
  if (threads < 1 || threads > 64) return 2;
  uint64_t exp[MC_STAT_COUNT] = {0};
  void *m = mgpuModuleLoad((void *)PTX, sizeof PTX);
  g_function = mgpuModuleGetFunction(m, "k");
  exp[MC_STAT_module_loads] = exp[MC_STAT_function_lookups] = 1;
  run(waves, threads, exp);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) { /* one thread here: every parent block but main's is free to take over */
    /* the parent's module handles read as stale in a child (module_cache.h): loaded afresh */
    g_function = mgpuModuleGetFunction(mgpuModuleLoad((void *)PTX, sizeof PTX), "k");
    exp[MC_STAT_module_loads]++;
    exp[MC_STAT_function_lookups]++;
    run(1, threads, exp);
    CHECK(mc_stats_blocks() <= threads + 1);
    printf("%s\n", g_failures ? "child failed" : "child ok");
    fflush(stdout);
    exit(g_failures ? 1 : 0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  run(1, threads, exp); /* the parent goes on as before */
  mgpuModuleUnload(m);
  printf("%s\n", g_failures ? "failed" : "ok");
  return g_failures ? 1 : 0;
}
