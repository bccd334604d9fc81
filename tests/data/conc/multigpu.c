/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* multigpu.c - several GPUs with LLVM 22 code (issue 4), linked with conc_llvm22.o: its module is
 * loaded by a global constructor, before main and before any device is chosen.
 *
 *   multigpu NDEV threads|seq ITERS
 *
 * For each device d < NDEV (one thread per device, or one after the other in the main thread):
 * mgpuSetDefaultDevice(d), allocate a buffer, run fill(out, 1000 + d) and join_loop(acc, ITERS)
 * (streams and events taken and joined on that device), read back and check the values. Then it
 * checks where the work happened: on a real driver, the device that holds each buffer
 * (cuPointerGetAttribute DEVICE_ORDINAL), which is the only device whose kernels can write it
 * (no peer access is enabled); on the fake driver (seq mode), the device of the stream and of the
 * function of the last launch. Prints one line per device and "ok" when all is right.
 * MULTIGPU_NO_CHECK=1 skips the value checks (the fake driver runs no kernel).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../csrc/include/mgpu_abi.h"

typedef struct { int32_t *allocated, *aligned; int64_t offset, sizes[1], strides[1]; } MemRefI32;
void _mlir_ciface_fill(MemRefI32 *out, int32_t v);
void _mlir_ciface_join_loop(MemRefI32 *acc, int64_t n);

#define MAXD 8
static int g_ndev, g_iters, g_check = 1;
static int g_ok[MAXD], g_where[MAXD], g_stream_dev[MAXD], g_fn_dev[MAXD];
static int32_t g_val[MAXD][4];
static void *g_drv;

static int buffer_device(void *p) {
  int (*get)(void *, int, unsigned long long) =
      g_drv ? (int (*)(void *, int, unsigned long long))dlsym(g_drv, "cuPointerGetAttribute") : NULL;
  if (!get) return -2; /* the fake driver has none */
  int ord = -1;
  return get(&ord, 9 /* CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL */, (unsigned long long)(uintptr_t)p)
             ? -3 : ord;
}

static void *run_device(void *arg) {
  int d = (int)(intptr_t)arg;
  mgpuSetDefaultDevice(d);
  void *s = mgpuStreamCreate();
  int32_t *p = mgpuMemAlloc(4 * 4, s, false);
  mgpuMemset32(p, 0, 4, s);
  mgpuStreamSynchronize(s);
  MemRefI32 out = {p, p, 0, {1}, {1}}, acc = {p + 1, p + 1, 0, {3}, {1}};
  _mlir_ciface_fill(&out, 1000 + d);
  if (g_drv) { /* fake driver: where did the last launch go? (single-threaded use only) */
    void *(*last_stream)(void) = (void *(*)(void))dlsym(g_drv, "fake_last_stream");
    void *(*last_fn)(void) = (void *(*)(void))dlsym(g_drv, "fake_last_function");
    int (*sdev)(void *) = (int (*)(void *))dlsym(g_drv, "fake_stream_device");
    int (*fdev)(void *) = (int (*)(void *))dlsym(g_drv, "fake_function_device");
    if (last_stream && last_fn && sdev && fdev) {
      g_stream_dev[d] = sdev(last_stream());
      g_fn_dev[d] = fdev(last_fn());
    }
  }
  _mlir_ciface_join_loop(&acc, g_iters);
  mgpuMemcpy(g_val[d], p, sizeof g_val[d], s);
  mgpuStreamSynchronize(s);
  g_where[d] = buffer_device(p);
  uint32_t n = (uint32_t)g_iters;
  g_ok[d] = !g_check || (g_val[d][0] == 1000 + d && g_val[d][1] == (int32_t)n &&
                         g_val[d][2] == (int32_t)n && (uint32_t)g_val[d][3] == n * (n + 1));
  mgpuMemFree(p, s);
  mgpuStreamDestroy(s);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s NDEV threads|seq ITERS\n", argv[0]);
    return 2;
  }
  g_ndev = atoi(argv[1]);
  g_iters = atoi(argv[3]);
  if (g_ndev < 1 || g_ndev > MAXD) return 2;
  g_check = !getenv("MULTIGPU_NO_CHECK");
  const char *drv = getenv("MGPU_CACHED_CUDA_DRIVER");
  g_drv = dlopen(drv && *drv ? drv : "libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  for (int d = 0; d < MAXD; ++d) g_stream_dev[d] = g_fn_dev[d] = -1;
  int threads = !strcmp(argv[2], "threads");
  if (threads) {
    pthread_t th[MAXD];
    for (int d = 0; d < g_ndev; ++d) pthread_create(&th[d], NULL, run_device, (void *)(intptr_t)d);
    for (int d = 0; d < g_ndev; ++d) pthread_join(th[d], NULL);
  } else {
    for (int d = 0; d < g_ndev; ++d) run_device((void *)(intptr_t)d);
  }
  int bad = 0;
  for (int d = 0; d < g_ndev; ++d) {
    int fake = g_where[d] == -2;
    int placed = fake ? (threads || (g_stream_dev[d] == d && g_fn_dev[d] == d)) : g_where[d] == d;
    printf("device %d: values %d %d %d %d %s; buffer on device %d; last launch stream/function "
           "device %d/%d -> %s\n", d, g_val[d][0], g_val[d][1], g_val[d][2], g_val[d][3],
           g_ok[d] ? "right" : "WRONG", g_where[d], g_stream_dev[d], g_fn_dev[d],
           placed ? "on the chosen device" : "NOT ON THE CHOSEN DEVICE");
    bad += !g_ok[d] || !placed;
  }
  if (bad) return 1;
  printf("ok\n");
  return 0;
}
