/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* counter_main.c - runs counter.mlir's step (counter_llvmV.o, module-scope state, issue 19 item 1).
 *
 *   counter_main N      N steps; each launches count_up once (out[0] = counter; counter += 1)
 *
 * Prints "values v1 v2 ... vN" (what each launch saw) and exits 0. A module that starts from its
 * image at every load (LLVM <= 20 code loads it around each launch) gives 7 7 7 ...; one loaded
 * once (LLVM >= 21: in a global constructor) gives 7 8 9 ..., with the stock library as with the
 * cache. out is host_shared memory (mgpuMemAlloc), read by the host after each step, which
 * synchronizes its stream. With HARNESS_FAKE_COUNTS=name1,name2 it also prints the fake driver's
 * call counts (the driver named by MGPU_CACHED_CUDA_DRIVER) as "count name value". */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../csrc/include/mgpu_abi.h"
#include "../fake_counts.h"

void step(int32_t *allocated, int32_t *aligned, int64_t offset, int64_t size, int64_t stride);


int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 3;
  int32_t *out = (int32_t *)mgpuMemAlloc(sizeof *out, NULL, true);
  if (!out) {
    fprintf(stderr, "mgpuMemAlloc failed\n");
    return 1;
  }
  printf("values");
  for (long i = 0; i < n; ++i) {
    *out = -1;
    step(out, out, 0, 1, 1);
    printf(" %d", (int)*out);
  }
  printf("\n");
  report_fake_counts();
  mgpuMemFree(out, NULL);
  return 0;
}
