/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* chain_fork.c - fork while another thread appends launches to a chain (MGPU_CACHED_CHAIN=1):
 * the chain's lock (csrc/support/lock.h, taken at every deferred launch and by the fork handlers)
 * must leave every child able to chain launches of its own and synchronise them.
 *
 *   chain_fork FORKS
 *
 * A second thread chains launches on its stream. After a first chain and its synchronisation the
 * stream is kept, so its later launches are appended with no driver call at all, under the chain's
 * lock only. The main thread forks while that thread appends, and lets it synchronise only
 * between forks: 30 launches a round, below the 32 after which a chain's head would be submitted
 * early. (The fake driver, like the real one, is not fork-safe itself: a fork while another
 * thread is inside it leaves its lock held in the child.) Each child (with a hang guard) loads the
 * module afresh, creates a stream, chains 10 launches on it twice, synchronising each, and exits
 * 0. Prints "ok FORKS" when every child exited 0. Linked with -lmgpu_cached, run against the fake
 * driver.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mgpu_abi.h"

static const char K[] =
    "//\n.version 8.0\n.target sm_90\n.address_size 64\n.visible .entry kf(\n)\n{\n ret;\n}\n";

static void *g_fn;
static int g_phase;    /* atomic: 2r: append (round r), 2r + 1: synchronise, -1: stop */
static int g_appended; /* atomic: launches appended in the current round */
static int g_done;     /* atomic: the last round synchronised */

static void chain(void *fn, void *s) {
  for (int i = 0; i < 10; ++i) mgpuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL, 0);
  mgpuStreamSynchronize(s);
}

static void *chainer(void *arg) {
  void *s = arg;
  for (int r = 1;; ++r) {
    int ph;
    while ((ph = __atomic_load_n(&g_phase, __ATOMIC_ACQUIRE)) != 2 * r)
      if (ph < 0) return NULL;
    for (int i = 0; i < 30; ++i) { /* appended under the chain's lock: no driver call */
      mgpuLaunchKernel(g_fn, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL, 0);
      __atomic_store_n(&g_appended, i + 1, __ATOMIC_RELEASE);
    }
    while ((ph = __atomic_load_n(&g_phase, __ATOMIC_ACQUIRE)) != 2 * r + 1)
      if (ph < 0) return NULL;
    mgpuStreamSynchronize(s);
    __atomic_store_n(&g_done, r, __ATOMIC_RELEASE);
  }
}

int main(int argc, char **argv) {
  int forks = argc > 1 ? atoi(argv[1]) : 50;
  void *m = mgpuModuleLoad((void *)K, sizeof K);
  g_fn = m ? mgpuModuleGetFunction(m, "kf") : NULL;
  void *s = mgpuStreamCreate();
  if (!g_fn || !s) return 2;
  chain(g_fn, s); /* the stream is kept from here on */
  chain(g_fn, s);
  pthread_t t;
  pthread_create(&t, NULL, chainer, s);
  int bad = 0;
  for (int r = 1; r <= forks && !bad; ++r) {
    __atomic_store_n(&g_appended, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g_phase, 2 * r, __ATOMIC_RELEASE);
    while (__atomic_load_n(&g_appended, __ATOMIC_ACQUIRE) < 1 + r % 25) { /* fork mid-chain */
    }
    pid_t pid = fork();
    if (pid == 0) {
      alarm(10); /* a hung child is killed: the test fails */
      /* the parent's handles are stale here (the fork handlers): the module is loaded afresh */
      void *cm = mgpuModuleLoad((void *)K, sizeof K);
      void *cf = cm ? mgpuModuleGetFunction(cm, "kf") : NULL;
      void *cs = mgpuStreamCreate();
      if (!cf || !cs) _exit(3);
      chain(cf, cs);
      chain(cf, cs);
      mgpuStreamDestroy(cs);
      _exit(0);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      printf("child %d: status %d\n", r, st);
      bad = 1; /* one is enough */
      break;
    }
    __atomic_store_n(&g_phase, 2 * r + 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&g_done, __ATOMIC_ACQUIRE) < r) {
    }
  }
  __atomic_store_n(&g_phase, -1, __ATOMIC_RELEASE);
  pthread_join(t, NULL);
  mgpuStreamSynchronize(s);
  if (bad) return 1;
  printf("ok %d\n", forks);
  return 0;
}
