/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* fork_exit.c - the caching allocator across fork() and at exit, against the fake CUDA driver
 * (tests/drivers/fakecuda.c); run by tests/test_allocator.py. Built together with the library's
 * sources (csrc/ *.c), since the fork hooks are internal. Prints "ok" when every check passed.
 *
 *   fork_exit fork  a ready block r and a pending block p (freed on a stream while the device is
 *                   stuck: the reclaimer sits in cuCtxSynchronize); fork (fork.c runs the hooks). The
 *                   child: no driver call by the hook, empty gauges, a fresh allocator (neither r
 *                   nor p handed out), a new reclaimer of its own. The parent: intact, p comes back
 *                   once the device is released.
 *   fork_exit exit  main returns while the reclaimer sits blocked in cuCtxSynchronize: the process
 *                   must exit at once (the thread is detached and never waited for).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "memory/allocator.h"
#include "include/mgpu_abi.h"
#include "support/stats.h"

static void (*fake_hold)(int);
static int (*fake_blocked)(void);
static void (*fake_set_busy_launches)(int);
static long (*fake_count)(const char *);

static int failures;
#define CHECK(c)                                                                                  \
  do {                                                                                            \
    if (!(c)) {                                                                                   \
      printf("check failed: %s (line %d)\n", #c, __LINE__);                                      \
      failures++;                                                                                 \
    }                                                                                             \
  } while (0)

static uint64_t stat(mc_stat_id id) { return mc_stat_get(id); }

/* Wait (at most 20 s, a guard against hangs) until cond holds. */
#define UNTIL(cond)                                                                               \
  do {                                                                                            \
    for (int i_ = 0; i_ < 20000 && !(cond); ++i_) usleep(1000);                                   \
    CHECK(cond);                                                                                  \
  } while (0)

static const char PTX[] = "//\n.version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(\n)\n{\n ret;\n}\n";

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "fork";
  void *fk = dlopen(getenv("MGPU_CACHED_CUDA_DRIVER"), RTLD_NOW);
  if (!fk) return printf("no fake driver\n"), 2;
  *(void **)&fake_hold = dlsym(fk, "fake_hold");
  *(void **)&fake_blocked = dlsym(fk, "fake_blocked");
  *(void **)&fake_set_busy_launches = dlsym(fk, "fake_set_busy_launches");
  *(void **)&fake_count = dlsym(fk, "fake_count");
  void *f = mgpuModuleGetFunction(mgpuModuleLoad((void *)PTX, sizeof PTX), "k");
  void *s = mgpuStreamCreate();
  void *r = mgpuMemAlloc(4096, NULL, 0), *p = mgpuMemAlloc(4096, s, 0);
  mgpuMemFree(r, NULL); /* ready at once */
  fake_set_busy_launches(1);
  fake_hold(1);
  mgpuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL, 0); /* waits for the host, say */
  mgpuMemFree(p, s);
  UNTIL(fake_blocked() == 1); /* the reclaimer is in cuCtxSynchronize */
  if (strcmp(mode, "exit") == 0) {
    printf("ok\n");
    fflush(stdout);
    return failures != 0; /* exit with the reclaimer blocked */
  }

  static const char *const calls[] = {"cuMemFree", "cuCtxSynchronize", "cuStreamDestroy",
                                      "cuEventDestroy", "cuMemAlloc", "cuStreamCreate"};
  long before[6];
  for (int i = 0; i < 6; ++i) before[i] = fake_count(calls[i]);
  pid_t pid = fork(); /* the library's pthread_atfork registration (fork.c) runs the hooks */
  if (pid == 0) {
    for (int i = 0; i < 6; ++i) CHECK(fake_count(calls[i]) == before[i]); /* no driver call */
    CHECK(stat(MC_STAT_alloc_bytes_cached) == 0 && stat(MC_STAT_alloc_bytes_pending) == 0);
    CHECK(stat(MC_STAT_alloc_bytes_in_use) == 0);
    fake_hold(0); /* the child's copy of the device is not stuck */
    void *q = mgpuMemAlloc(4096, NULL, 0);
    CHECK(q && q != r && q != p); /* the parent's blocks are forgotten */
    CHECK(fake_count("cuMemAlloc") == before[4] + 1);
    mgpuMemFree(q, s); /* a new reclaimer, in the child */
    UNTIL(stat(MC_STAT_alloc_bytes_pending) == 0);
    CHECK(mgpuMemAlloc(4096, NULL, 0) == q);
    printf("child %s\n", failures ? "failed" : "ok");
    fflush(stdout);
    _exit(failures != 0);
  }
  int status = 0;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK(stat(MC_STAT_alloc_bytes_pending) == 4096); /* the parent's state is intact */
  void *x = mgpuMemAlloc(4096, NULL, 0);
  CHECK(x == r && x != p);
  fake_hold(0);
  UNTIL(stat(MC_STAT_alloc_bytes_pending) == 0);
  CHECK(mgpuMemAlloc(4096, NULL, 0) == p);
  printf("%s\n", failures ? "failed" : "ok");
  return failures != 0;
}
