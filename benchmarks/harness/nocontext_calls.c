/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* nocontext_calls.c - which driver calls the library makes on its own streams and graph execs the
 * driver accepts in a thread with no current context (issue 21's bare launches, context.h): each
 * call is made once with device 0's primary context current and once with no context current
 * (cuCtxSetCurrent(NULL)), and the two results are printed side by side; then the cost of each
 * accepted call both ways (median of 7 batches of N calls, ns per call).
 *
 *   nocontext_calls FATBIN [N [OP]]   FATBIN: a blob with a kernel `empty` (no arguments); OP:
 *                                     only the call of that index (a call the driver crashes on
 *                                     with no context current then ends that process only: the
 *                                     run script runs each OP in its own process)
 *
 * Build: cc -O2 -I$CUDA/include nocontext_calls.c -lcuda
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver_setup.h"

static CUcontext ctx;
static CUfunction fn;
static CUstream s;
static CUevent ev;
static CUgraphExec exec;
static CUgraphNode node;
static CUdeviceptr buf;

enum { OP_LAUNCH, OP_GRAPH_LAUNCH, OP_NODE_PARAMS, OP_IS_CAPTURING, OP_CAPTURE_INFO, OP_EXCHANGE,
       OP_STREAM_QUERY, OP_STREAM_SYNC, OP_EVENT_RECORD, OP_EVENT_QUERY, OP_WAIT_EVENT,
       OP_MEMSET, OP_CTX_ID, OP_GET_CURRENT, OP_COUNT };
static const char *names[OP_COUNT] = {
    "cuLaunchKernel", "cuGraphLaunch", "cuGraphExecKernelNodeSetParams", "cuStreamIsCapturing",
    "cuStreamGetCaptureInfo", "cuThreadExchangeStreamCaptureMode x2", "cuStreamQuery",
    "cuStreamSynchronize", "cuEventRecord", "cuEventQuery", "cuStreamWaitEvent",
    "cuMemsetD32Async", "cuCtxGetId", "cuCtxGetCurrent"};

static CUresult op(int i) {
  switch (i) {
  case OP_LAUNCH: return cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL);
  case OP_GRAPH_LAUNCH: return cuGraphLaunch(exec, s);
  case OP_NODE_PARAMS: { /* crashed in run N64 with the context current too (these parameters,
                          * not the missing context; unexplained): the library pushes first */
    CUDA_KERNEL_NODE_PARAMS p;
    memset(&p, 0, sizeof p);
    p.func = fn;
    p.gridDimX = p.gridDimY = p.gridDimZ = 1;
    p.blockDimX = p.blockDimY = p.blockDimZ = 1;
    return cuGraphExecKernelNodeSetParams(exec, node, &p);
  }
  case OP_IS_CAPTURING: {
    CUstreamCaptureStatus st;
    return cuStreamIsCapturing(s, &st);
  }
  case OP_CAPTURE_INFO: {
    CUstreamCaptureStatus st;
    return cuStreamGetCaptureInfo(s, &st, NULL, NULL, NULL, NULL, NULL);
  }
  case OP_EXCHANGE: {
    CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
    CUresult r = cuThreadExchangeStreamCaptureMode(&m);
    if (r) return r;
    return cuThreadExchangeStreamCaptureMode(&m);
  }
  case OP_STREAM_QUERY: return cuStreamQuery(s);
  case OP_STREAM_SYNC: return cuStreamSynchronize(s);
  case OP_EVENT_RECORD: return cuEventRecord(ev, s);
  case OP_EVENT_QUERY: return cuEventQuery(ev);
  case OP_WAIT_EVENT: return cuStreamWaitEvent(s, ev, 0);
  case OP_MEMSET: return cuMemsetD32Async(buf, 0, 16, s);
  case OP_CTX_ID: {
    unsigned long long id;
    return cuCtxGetId(ctx, &id);
  }
  case OP_GET_CURRENT: {
    CUcontext c;
    return cuCtxGetCurrent(&c);
  }
  }
  return CUDA_ERROR_INVALID_VALUE;
}

static const char *err(CUresult r) {
  const char *n = NULL;
  cuGetErrorName(r, &n);
  return n ? n : "?";
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double cost(int i, int bare, long n) {
  double t[7];
  CK(cuCtxSetCurrent(bare ? NULL : ctx));
  for (int b = 0; b < 7; ++b) {
    double t0 = now_ns();
    for (long k = 0; k < n; ++k) op(i);
    t[b] = (now_ns() - t0) / (double)n;
    CK(cuCtxSetCurrent(ctx));
    CK(cuStreamSynchronize(s)); /* launches: the queue drained between batches */
    CK(cuCtxSetCurrent(bare ? NULL : ctx));
  }
  CK(cuCtxSetCurrent(ctx));
  qsort(t, 7, sizeof t[0], cmp);
  return t[3];
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FATBIN [N]\n", argv[0]);
    return 2;
  }
  long n = argc > 2 ? atol(argv[2]) : 5000;
  int only = argc > 3 ? atoi(argv[3]) : -1;
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 2;
  static char image[1 << 22];
  size_t len = fread(image, 1, sizeof image, f);
  fclose(f);
  if (!len) return 2;
  CUmodule mod = driver_setup(image, &ctx);
  CK(cuModuleGetFunction(&fn, mod, "empty"));
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
  CK(cuMemAlloc(&buf, 4096));
  CUgraph g;
  CUDA_KERNEL_NODE_PARAMS p;
  memset(&p, 0, sizeof p);
  p.func = fn;
  p.gridDimX = p.gridDimY = p.gridDimZ = 1;
  p.blockDimX = p.blockDimY = p.blockDimZ = 1;
  CK(cuGraphCreate(&g, 0));
  CK(cuGraphAddKernelNode(&node, g, NULL, 0, &p));
  CK(cuGraphInstantiate(&exec, g, 0));
  int ok[OP_COUNT];
  if (only < 0) printf("%-40s %-28s %s\n", "call", "context current", "no context current");
  for (int i = 0; i < OP_COUNT; ++i) {
    if (only >= 0 && i != only) continue;
    printf("%-40s ", names[i]);
    fflush(stdout); /* a crash below still names the call */
    CK(cuCtxSetCurrent(ctx));
    CUresult a = op(i);
    CK(cuStreamSynchronize(s));
    CK(cuCtxSetCurrent(NULL));
    CUresult b = op(i);
    CK(cuCtxSetCurrent(ctx));
    CK(cuStreamSynchronize(s));
    ok[i] = a == CUDA_SUCCESS && b == CUDA_SUCCESS;
    printf("%-28s %s", err(a), err(b));
    fflush(stdout);
    if (ok[i]) printf("   ns per call, current %.1f, none %.1f", cost(i, 0, n), cost(i, 1, n));
    printf("\n");
  }
  return 0;
}
