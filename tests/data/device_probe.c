/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* device_probe.c - runs bench(N) of an MLIR-compiled empty_loop object (tests/data/mlir/) and
 * prints which device its work went to, asking the fake driver named by MGPU_CACHED_CUDA_DRIVER:
 *   "device stream=<d> function=<d>" (the device of the last launch's stream and function).
 * With LLVM 22's object the module is loaded in a global constructor, before main. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

void bench(int64_t n);

int main(int argc, char **argv) {
  bench(argc > 1 ? atol(argv[1]) : 3);
  void *h = dlopen(getenv("MGPU_CACHED_CUDA_DRIVER"), RTLD_NOW | RTLD_NOLOAD);
  if (!h) return 2;
  void *(*last_stream)(void) = (void *(*)(void))dlsym(h, "fake_last_stream");
  void *(*last_function)(void) = (void *(*)(void))dlsym(h, "fake_last_function");
  int (*stream_device)(void *) = (int (*)(void *))dlsym(h, "fake_stream_device");
  int (*function_device)(void *) = (int (*)(void *))dlsym(h, "fake_function_device");
  printf("device stream=%d function=%d\n", stream_device(last_stream()),
         function_device(last_function()));
  return 0;
}
