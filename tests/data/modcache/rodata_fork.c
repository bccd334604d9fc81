/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* rodata_fork.c - fork while another thread makes cache hits on a blob in a shared library's
 * .rodata (each hit asks the loader for its generation through dl_iterate_phdr, which holds the
 * loader's list lock, a lock glibc's fork does not reset in the child).
 *
 *   rodata_fork LIBBLOB FORKS THREADS
 *
 * LIBBLOB exports mc_test_blob (a PTX blob with the kernel k_rodata). A thread loads and unloads
 * the blob in a loop (THREADS such threads); the main thread forks FORKS times; each child, with a 5 s alarm, walks the
 * loaded objects, dlopens LIBBLOB again (a no-op dlopen still takes the loader's locks: a new
 * handle of a loaded object), loads the blob through the library (its cache starts empty) and
 * exits 0. Prints how many children did not exit normally, and "ok" when none.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mgpu_abi.h"

static const void *g_blob;
static int g_done; /* atomic */
static long g_hits; /* atomic */

static int first(struct dl_phdr_info *info, size_t size, void *data) {
  (void)info, (void)size, (void)data;
  return 1;
}

static void *hitter(void *arg) {
  (void)arg;
  while (!__atomic_load_n(&g_done, __ATOMIC_RELAXED)) {
    mgpuModuleUnload(mgpuModuleLoad(g_blob, 0));
    __atomic_add_fetch(&g_hits, 1, __ATOMIC_RELAXED);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 4) return 2;
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  g_blob = lib ? dlsym(lib, "mc_test_blob") : NULL;
  if (!g_blob) return 1;
  int forks = atoi(argv[2]);
  mgpuModuleUnload(mgpuModuleLoad(g_blob, 0)); /* cached: the thread's loads are hits */
  int threads = atoi(argv[3]);
  pthread_t t[8];
  if (threads > 8) threads = 8;
  for (int i = 0; i < threads; ++i) pthread_create(&t[i], NULL, hitter, NULL);
  int bad = 0;
  for (int i = 0; i < forks; ++i) {
    usleep(100);
    pid_t p = fork();
    if (p == 0) {
      alarm(5);
      dl_iterate_phdr(first, NULL);
      void *again = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
      void *m = mgpuModuleLoad(g_blob, 0);
      _exit(again && m ? 0 : 3);
    }
    int st = 0;
    waitpid(p, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) bad++;
  }
  __atomic_store_n(&g_done, 1, __ATOMIC_RELAXED);
  for (int i = 0; i < threads; ++i) pthread_join(t[i], NULL);
  printf("%d of %d children failed or hung (%ld hits meanwhile)\n", bad, forks, g_hits);
  if (!bad) printf("ok\n");
  return bad ? 1 : 0;
}
