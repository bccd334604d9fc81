/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* fork_load.c - fork while another thread is inside mgpuModuleLoad (its driver load held in the
 * fake driver's gate, tests/drivers/fakecuda.c): the child's own loads must complete.
 *
 *   fork_load [expect [register]]
 *
 * Built together with the library's sources. With "register" the program registers the module
 * cache's and the context's fork handlers itself (for a tree in which the library does not
 * register them: the test passes it only then). With "expect" it checks what they promise in the
 * child:
 * the parent's module and function handles read as stale, the same blob loads afresh (a new
 * handle), the driver is initialised afresh (cuInit called again). Prints "child ok" (from the
 * child) and "parent ok"; exits 0 when both hold.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "platform/context.h"
#include "mgpu_abi.h"
#include "modules/module_cache.h"

static const char A[] = "//\n.version 8.0\n.target sm_90\n.address_size 64\n.visible .entry ka(\n)\n{\n ret;\n}\n";
static const char B[] = "//\n.version 8.0\n.target sm_90\n.address_size 64\n.visible .entry kb(\n)\n{\n ret;\n}\n";
static const char C[] = "//\n.version 8.0\n.target sm_90\n.address_size 64\n.visible .entry kc(\n)\n{\n ret;\n}\n";

static long (*fake_count)(const char *);
static void (*fake_gate)(const char *, int);
static int (*fake_gate_waiting)(void);
static void (*fake_gate_release)(void);

static void prepare(void) { mc_module_cache_fork_prepare(); mc_context_fork_prepare(); }
static void parent(void) { mc_context_fork_parent(); mc_module_cache_fork_parent(); }
static void child(void) { mc_context_fork_child(); mc_module_cache_fork_child(); }

static void *loader(void *arg) {
  (void)arg;
  return mgpuModuleLoad((void *)B, sizeof B);
}

#define CHECK(c)                                                                                  \
  do {                                                                                            \
    if (!(c)) {                                                                                   \
      printf("%s: check failed: %s\n", getpid() == g_parent ? "parent" : "child", #c);          \
      fflush(stdout);                                                                             \
      _exit(1);                                                                                   \
    }                                                                                             \
  } while (0)
static pid_t g_parent;

int main(int argc, char **argv) {
  int handlers = argc > 1 && strcmp(argv[1], "expect") == 0;
  int register_them = argc > 2 && strcmp(argv[2], "register") == 0;
  g_parent = getpid();
  void *fk = dlopen(getenv("MGPU_CACHED_CUDA_DRIVER"), RTLD_NOW);
  if (!fk) return 2;
  *(void **)&fake_count = dlsym(fk, "fake_count");
  *(void **)&fake_gate = dlsym(fk, "fake_gate");
  *(void **)&fake_gate_waiting = dlsym(fk, "fake_gate_waiting");
  *(void **)&fake_gate_release = dlsym(fk, "fake_gate_release");
  if (register_them) pthread_atfork(prepare, parent, child);

  void *ma = mgpuModuleLoad((void *)A, sizeof A);
  void *fa = mgpuModuleGetFunction(ma, "ka");
  CHECK(ma && fa);
  mgpuLaunchKernel(fa, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL, 0);
  fake_gate("cuModuleLoadData", 1);
  pthread_t t;
  pthread_create(&t, NULL, loader, NULL);
  while (fake_gate_waiting() != 1) usleep(1000);

  pid_t pid = fork();
  if (pid == 0) {
    alarm(20); /* a hang guard: a hung child is killed and the test fails */
    long inits = fake_count("cuInit");
    void *mc = mgpuModuleLoad((void *)C, sizeof C);
    void *fc = mgpuModuleGetFunction(mc, "kc");
    CHECK(mc && fc);
    long launches = fake_count("cuLaunchKernel");
    mgpuLaunchKernel(fc, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL, 0);
    CHECK(fake_count("cuLaunchKernel") == launches + 1);
    if (handlers) {
      CHECK(fake_count("cuInit") == inits + 1);           /* initialised afresh */
      CHECK(mgpuModuleGetFunction(ma, "ka") == NULL);      /* the parent's handle: stale */
      long loads = fake_count("cuModuleLoadData");
      void *ma2 = mgpuModuleLoad((void *)A, sizeof A);     /* the parent's module is not reused */
      CHECK(ma2 && ma2 != ma && fake_count("cuModuleLoadData") == loads + 1);
      launches = fake_count("cuLaunchKernel");
      mgpuLaunchKernel(fa, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL, 0); /* stale: not launched */
      CHECK(fake_count("cuLaunchKernel") == launches);
    }
    printf("child ok\n");
    fflush(stdout);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  fake_gate_release();
  void *mb = NULL;
  pthread_join(t, &mb);
  CHECK(mb && mgpuModuleGetFunction(mb, "kb"));
  CHECK(mgpuModuleGetFunction(ma, "ka") == fa); /* the parent's handles are untouched */
  if (WIFSIGNALED(status)) printf("child killed by signal %d\n", WTERMSIG(status));
  printf("parent ok\n");
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
