/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* main.c - a C program built against the installed mgpu-cached package, through pkg-config or
 * CMake (see README.md beside it): it includes the package's headers, calls the library's own
 * interface (mgpu_cached.h) and the mgpu* ABI (mgpu_abi.h), and prints what it saw.
 *
 * On a machine without a GPU the driver does not load: the program says so and exits 0 after
 * the library reported the failed allocation in the stock style.
 */
#include <stdio.h>

#include <mgpu_abi.h>
#include <mgpu_cached.h>

int main(void) {
  printf("mgpu-cached %s, %s, backend %s\n", mgpu_cached_version(),
         mgpu_cached_enabled() ? "cached" : "stock behaviour", mgpu_cached_backend());
  const char *err = mgpu_cached_driver_error();
  if (err) {
    printf("no driver: %s\n", err);
    return 0;
  }
  void *stream = mgpuStreamCreate();
  void *p = mgpuMemAlloc(1 << 20, stream, false);
  mgpuMemFree(p, NULL); /* a NULL-stream free waits for the device, as the stock one: reusable at once */
  void *q = mgpuMemAlloc(1 << 20, stream, false); /* the caching allocator hands the block back */
  mgpuMemFree(q, stream);
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(stream);
  printf("allocated %s, reused %s\n", p ? "yes" : "no", p && p == q ? "yes" : "no");
  uint64_t values[128];
  int n = mgpu_cached_stats_read(values, 128);
  for (int i = 0; i < n; ++i)
    if (values[i]) printf("  %s %llu\n", mgpu_cached_stats_name(i), (unsigned long long)values[i]);
  return 0;
}
