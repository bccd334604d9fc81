/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* chain_fork.c - fork while another thread chains launches (MGPU_CACHED_CHAIN=1): the chain's
 * lock (csrc/support/lock.h, taken at every deferred launch and by the fork handlers) must leave
 * every child able to chain launches of its own and synchronise them.
 *
 *   chain_fork FORKS
 *
 * A second thread records chains of 10 launches on its stream and synchronises each, in a loop,
 * until the main thread has forked FORKS children; each child (with a hang guard) loads the
 * module afresh, creates a stream, chains 10 launches on it twice, synchronising each, and exits
 * 0. Prints "ok" when every child exited
 * 0 and the parent's chains all ran. Linked with -lmgpu_cached, run against the fake driver.
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
static volatile int g_stop;
static long g_chains;

static void chain(void *fn, void *s) {
  for (int i = 0; i < 10; ++i) mgpuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL, 0);
  mgpuStreamSynchronize(s);
}

static void *chainer(void *arg) {
  (void)arg;
  void *s = mgpuStreamCreate();
  while (!__atomic_load_n(&g_stop, __ATOMIC_ACQUIRE)) {
    chain(g_fn, s);
    ++g_chains;
  }
  mgpuStreamDestroy(s);
  return NULL;
}

int main(int argc, char **argv) {
  int forks = argc > 1 ? atoi(argv[1]) : 50;
  void *m = mgpuModuleLoad((void *)K, sizeof K);
  g_fn = m ? mgpuModuleGetFunction(m, "kf") : NULL;
  if (!g_fn) return 2;
  pthread_t t;
  pthread_create(&t, NULL, chainer, NULL);
  int bad = 0;
  for (int i = 0; i < forks; ++i) {
    usleep(200);
    pid_t pid = fork();
    if (pid == 0) {
      alarm(10); /* a hung child is killed: the test fails */
      /* the parent's handles are stale here (the fork handlers): the module is loaded afresh */
      void *cm = mgpuModuleLoad((void *)K, sizeof K);
      void *cf = cm ? mgpuModuleGetFunction(cm, "kf") : NULL;
      void *s = mgpuStreamCreate();
      if (!cf || !s) _exit(3);
      chain(cf, s);
      chain(cf, s);
      mgpuStreamDestroy(s);
      _exit(0);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      printf("child %d: status %d\n", i, st);
      ++bad;
      break; /* one is enough */
    }
  }
  __atomic_store_n(&g_stop, 1, __ATOMIC_RELEASE);
  pthread_join(t, NULL);
  if (bad || g_chains < 1) return 1;
  printf("ok %ld\n", g_chains);
  return 0;
}
