/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* rank_probe.c - one process per GPU under a launcher (issue 13, MGPU_CACHED_DEVICE=local-rank).
 *
 *   rank_probe N       (linked with tests/data/mlir/empty_loop_llvm22.o, whose module is loaded
 *                       by a global constructor, before main)
 *
 * Runs the MLIR program's bench(N), allocates a buffer with mgpuMemAlloc, and prints which device
 * holds it (cuPointerGetAttribute DEVICE_ORDINAL through the real driver), with the launcher's
 * LOCAL_RANK: "rank R: device D". No mgpuSetDefaultDevice call anywhere: the device comes from
 * MGPU_CACHED_DEVICE=local-rank. Exit status 0 when the device is LOCAL_RANK modulo the devices.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../../csrc/include/mgpu_abi.h"

void bench(int64_t n);

int main(int argc, char **argv) {
  bench(argc > 1 ? atol(argv[1]) : 100);
  void *p = mgpuMemAlloc(16, NULL, false);
  void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  int (*get)(void *, int, unsigned long long) =
      drv ? (int (*)(void *, int, unsigned long long))dlsym(drv, "cuPointerGetAttribute") : NULL;
  int (*count)(int *) = drv ? (int (*)(int *))dlsym(drv, "cuDeviceGetCount") : NULL;
  int ord = -1, n = 0;
  if (!get || get(&ord, 9 /* CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL */, (uintptr_t)p) || !count ||
      count(&n))
    return 2;
  const char *r = getenv("LOCAL_RANK");
  int rank = r ? atoi(r) : 0;
  printf("rank %d: device %d of %d\n", rank, ord, n);
  mgpuMemFree(p, NULL);
  return ord == rank % n ? 0 : 1;
}
