/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* stay_on_device.c - objects stay on the device they were made on (trust issue item 7).
 *
 *   stay_on_device BLOB
 *
 * On device 0: load BLOB (tests/data/kernels.fatbin), make a stream, an event and two buffers
 * x, y (n = 1024 floats), copy x = i, y = 1 to them. Then mgpuSetDefaultDevice(1) and, on the
 * stream made on device 0: saxpy(2, x, y, n), record the event, wait for it on a new stream
 * (made on device 1), copy y back, synchronise. Prints "wrong W of N" (W = results != 2*i + 1)
 * and "ok" when W == 0. The stock wrapper keeps every call on its first device, so it gives 0
 * wrong too; the library must not turn this into an error or a cross-device access.
 * STAY_NO_CHECK=1 skips the value check (the fake driver runs no kernel).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../../csrc/include/mgpu_abi.h"

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 2;
  static char blob[1 << 22];
  size_t len = fread(blob, 1, sizeof blob, f);
  fclose(f);
  enum { N = 1024 };
  static float hx[N], hy[N];
  for (int i = 0; i < N; ++i) hx[i] = (float)i, hy[i] = 1.0f;
  mgpuSetDefaultDevice(0);
  void *m = mgpuModuleLoad(blob, len);
  void *k = mgpuModuleGetFunction(m, "saxpy");
  void *s = mgpuStreamCreate();
  void *e = mgpuEventCreate();
  float *x = mgpuMemAlloc(sizeof hx, s, false), *y = mgpuMemAlloc(sizeof hy, s, false);
  mgpuMemcpy(x, hx, sizeof hx, s);
  mgpuMemcpy(y, hy, sizeof hy, s);
  mgpuStreamSynchronize(s);
  mgpuSetDefaultDevice(1);
  float a = 2.0f;
  int n = N;
  void *args[] = {&a, &x, &y, &n};
  mgpuLaunchKernel(k, N / 256, 1, 1, 256, 1, 1, 0, s, args, NULL, 4);
  mgpuEventRecord(e, s);
  void *s1 = mgpuStreamCreate();
  mgpuStreamWaitEvent(s1, e);
  mgpuStreamSynchronize(s1);
  mgpuMemcpy(hy, y, sizeof hy, s);
  mgpuStreamSynchronize(s);
  int wrong = 0;
  if (!getenv("STAY_NO_CHECK"))
    for (int i = 0; i < N; ++i) wrong += hy[i] != 2.0f * (float)i + 1.0f;
  printf("wrong %d of %d\n", wrong, N);
  mgpuMemFree(x, s);
  mgpuMemFree(y, s);
  mgpuStreamDestroy(s);
  mgpuStreamDestroy(s1);
  mgpuEventDestroy(e);
  mgpuModuleUnload(m);
  if (wrong == 0) printf("ok\n");
  return wrong != 0;
}
