/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* hip_load_loop.c - the LLVM <= 20 launch shape on the HIP backend, for tests/test_hip_backend.py:
 * every iteration loads a code object the module cache cannot key (a clang offload bundle), gets
 * its function, launches it on each of the first DEVICES devices and unloads it (review line R8).
 * It prints the heap bytes in use (mallinfo2) before and after the measured iterations, taken
 * after a warm-up, so the test can bound what one load/launch/unload leaves behind, and the fake
 * HIP runtime's (MGPU_CACHED_HIP_RUNTIME) counts of module loads and unloads.
 *
 * Usage: hip_load_loop FORMAT ITERATIONS DEVICES
 *   FORMAT stand-in: the review's blob (the bundle magic, then text; its header does not add up,
 *                    so its length is unknown)
 *          bundle:   a real offload bundle (a host entry and a gfx942 entry holding the code)
 */
#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../csrc/include/mgpu_abi.h"

static const char k_code[] = ".visible .entry k(\n)\n{\n ret;\n}\n";

static size_t make_bundle(unsigned char *out) {
  static const char *const ids[2] = {"host-x86_64-unknown-linux-gnu",
                                     "hipv4-amdgcn-amd-amdhsa--gfx942"};
  uint64_t n = 2, header = 32;
  for (int i = 0; i < 2; ++i) header += 24 + strlen(ids[i]);
  memcpy(out, "__CLANG_OFFLOAD_BUNDLE__", 24);
  memcpy(out + 24, &n, 8);
  size_t pos = 32;
  for (int i = 0; i < 2; ++i) {
    uint64_t entry[3] = {header, i ? sizeof k_code : 0, strlen(ids[i])};
    memcpy(out + pos, entry, sizeof entry);
    memcpy(out + pos + sizeof entry, ids[i], entry[2]);
    pos += sizeof entry + entry[2];
  }
  memcpy(out + pos, k_code, sizeof k_code);
  return pos + sizeof k_code;
}

static int run(void *blob, int n, int devices, void *const *streams) {
  for (int i = 0; i < n; ++i) {
    void *m = mgpuModuleLoad(blob, 0);
    void *f = m ? mgpuModuleGetFunction(m, "k") : NULL;
    if (!f) return 1;
    for (int d = 0; d < devices; ++d) {
      mgpuSetDefaultDevice(d);
      mgpuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, streams[d], NULL, NULL, 0);
    }
    mgpuSetDefaultDevice(0);
    mgpuModuleUnload(m);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 4) return 2;
  int n = atoi(argv[2]), devices = atoi(argv[3]);
  static unsigned char blob[4096];
  if (strcmp(argv[1], "bundle") == 0) {
    make_bundle(blob);
  } else {
    memcpy(blob, "__CLANG_OFFLOAD_BUNDLE__", 24);
    memset(blob + 24, ' ', 16);
    memcpy(blob + 40, k_code, sizeof k_code);
  }
  void *streams[8];
  for (int d = 0; d < devices && d < 8; ++d) {
    mgpuSetDefaultDevice(d);
    streams[d] = mgpuStreamCreate();
  }
  if (run(blob, 100, devices, streams)) return 1; /* warm-up: pools, tables, first growths */
  size_t before = mallinfo2().uordblks;
  if (run(blob, n, devices, streams)) return 1;
  size_t after = mallinfo2().uordblks;
  printf("heap_before %zu\nheap_after %zu\n", before, after);
  const char *fake = getenv("MGPU_CACHED_HIP_RUNTIME");
  void *h = fake ? dlopen(fake, RTLD_NOW | RTLD_NOLOAD) : NULL;
  long (*count)(const char *) = h ? (long (*)(const char *))dlsym(h, "fake_count") : NULL;
  if (count)
    printf("loads %ld\nunloads %ld\n", count("hipModuleLoadData"), count("hipModuleUnload"));
  return 0;
}
