/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* hip_fork_child.c - the HIP backend's fork handlers (mc_hip_fork_prepare/parent/child), for
 * tests/test_hip_backend.py. Built together with the library's sources (csrc), so it calls the
 * backend's adapters (mc_cu) and handlers directly, and run with MGPU_CACHED_BACKEND=hip over the
 * fake HIP runtime (MGPU_CACHED_HIP_RUNTIME).
 *
 * The parent loads a library and gets a kernel, then forks; fork.c's pthread_atfork registration
 * runs the handlers. The child checks that the parent's handles fail as stale without any HIP
 * call, and that a new library loads, gets a handle of its own and unloads. The parent checks that
 * its library is intact. Prints one line per check ("ok ..." or "FAIL ..."); exits 0 if all pass.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "platform/backend.h"
#include "platform/driver.h"

static const char k_blob[] = ".visible .entry k(\n)\n{\n ret;\n}\n";
static int g_failed;

static void check(const char *who, const char *what, int ok) {
  printf("%s %s: %s\n", ok ? "ok" : "FAIL", who, what);
  fflush(stdout);
  if (!ok) g_failed = 1;
}

static long fake_count(const char *name) {
  static long (*count)(const char *);
  if (!count) {
    void *h = dlopen(getenv("MGPU_CACHED_HIP_RUNTIME"), RTLD_NOW | RTLD_NOLOAD);
    count = h ? (long (*)(const char *))dlsym(h, "fake_count") : NULL;
  }
  return count ? count(name) : -1;
}

int main(void) {
  if (MC_FAILED(mc_driver_load()) || !mc_backend_is_hip()) return 2;
  CUlibrary lib = NULL, lib2 = NULL;
  CUkernel k = NULL, k2 = NULL;
  CUfunction f = NULL;
  if (mc_cu.cuLibraryLoadData(&lib, k_blob, NULL, NULL, 0, NULL, NULL, 0) ||
      mc_cu.cuLibraryGetKernel(&k, lib, "k"))
    return 2;

  pid_t pid = fork(); /* the library's pthread_atfork registration (fork.c) runs the handlers */
  if (pid == 0) {
    long calls = fake_count("hipModuleUnload") + fake_count("hipModuleGetFunction");
    check("child", "the parent's library is stale",
          mc_cu.cuLibraryGetKernel(&k2, lib, "k") == MC_HIP_hipErrorInvalidHandle);
    check("child", "the parent's kernel is stale",
          mc_cu.cuKernelGetFunction(&f, k) == MC_HIP_hipErrorInvalidHandle);
    check("child", "unloading the parent's library fails as stale",
          mc_cu.cuLibraryUnload(lib) == MC_HIP_hipErrorInvalidHandle);
    check("child", "no HIP call for the parent's objects",
          fake_count("hipModuleUnload") + fake_count("hipModuleGetFunction") == calls);
    check("child", "a new library loads",
          mc_cu.cuLibraryLoadData(&lib2, k_blob, NULL, NULL, 0, NULL, NULL, 0) == 0);
    check("child", "with a handle of its own", lib2 && lib2 != lib);
    check("child", "its kernel resolves",
          mc_cu.cuLibraryGetKernel(&k2, lib2, "k") == 0 && k2 != k &&
              mc_cu.cuKernelGetFunction(&f, k2) == 0 && f);
    check("child", "and it unloads", mc_cu.cuLibraryUnload(lib2) == 0);
    _exit(g_failed);
  }
  int status = 0;
  check("parent", "fork", pid > 0 && waitpid(pid, &status, 0) == pid);
  check("parent", "the child's checks passed", WIFEXITED(status) && WEXITSTATUS(status) == 0);
  check("parent", "its kernel is intact",
        mc_cu.cuLibraryGetKernel(&k2, lib, "k") == 0 && k2 == k &&
            mc_cu.cuKernelGetFunction(&f, k) == 0 && f);
  check("parent", "its library unloads", mc_cu.cuLibraryUnload(lib) == 0);
  check("parent", "and is stale afterwards",
        mc_cu.cuLibraryGetKernel(&k2, lib, "k") == MC_HIP_hipErrorInvalidHandle);
  return g_failed;
}
