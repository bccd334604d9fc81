/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* dlclose_reclaimer.c - a host that unloads the library while its reclaimer thread is inside it
 * (as mlir-cpu-runner does with its --shared-libs at exit): a free on a stream the block was just
 * cleared on (work the library enqueued there) wakes the reclaimer, which first sleeps
 * MGPU_CACHED_ALLOCATOR_RECLAIM_US; the host dlcloses the library meanwhile
 * and lives on. Prints "survived" and exits 0 unless the thread ran unmapped code.
 *
 *   dlclose_reclaimer LIBRARY
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) { fprintf(stderr, "%s\n", dlerror()); return 2; }
  void *(*screate)(void) = (void *(*)(void))dlsym(h, "mgpuStreamCreate");
  void *(*alloc)(uint64_t, void *, int) = (void *(*)(uint64_t, void *, int))dlsym(h, "mgpuMemAlloc");
  void (*freep)(void *, void *) = (void (*)(void *, void *))dlsym(h, "mgpuMemFree");
  void (*memset32)(void *, unsigned, size_t, void *) =
      (void (*)(void *, unsigned, size_t, void *))dlsym(h, "mgpuMemset32");
  void *s = screate();
  void *p = alloc(4096, s, 0);
  memset32(p, 0, 1024, s); /* work on s: the free below counts as one on a busy stream */
  freep(p, s); /* wakes the reclaimer, which first sleeps RECLAIM_US */
  dlclose(h);
  usleep(400000);
  printf("survived\n");
  return 0;
}
