/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* handle_reuse.c - does the CUDA driver itself hand a destroyed event's / stream's value to the
 * next cuEventCreate / cuStreamCreate? (review R12: with driver handles, a use after destroy may
 * reach another owner's live object; with stock it does whenever the driver reuses the value.)
 * cc -O1 -o /tmp/hr benchmarks/neighbour/handle_reuse.c -I/usr/local/cuda/include -lcuda */
#include <cuda.h>
#include <stdio.h>

int main(void) {
  CUdevice d;
  CUcontext c;
  cuInit(0);
  cuDeviceGet(&d, 0);
  cuDevicePrimaryCtxRetain(&c, d);
  cuCtxSetCurrent(c);
  int same_e = 0, same_s = 0, n = 100;
  for (int i = 0; i < n; ++i) {
    CUevent e1, e2;
    cuEventCreate(&e1, CU_EVENT_DISABLE_TIMING);
    cuEventDestroy(e1);
    cuEventCreate(&e2, CU_EVENT_DISABLE_TIMING);
    same_e += e1 == e2;
    cuEventDestroy(e2);
    CUstream s1, s2;
    cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING);
    cuStreamDestroy(s1);
    cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING);
    same_s += s1 == s2;
    cuStreamDestroy(s2);
  }
  printf("create, destroy, create: same event value %d of %d, same stream value %d of %d\n",
         same_e, n, same_s, n);
  return 0;
}
