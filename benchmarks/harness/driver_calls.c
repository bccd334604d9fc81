/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* driver_calls.c - host cost of the driver calls the library adds to an MLIR step beside the ones
 * the stock wrapper makes (the allocating async step's per-step calls, issue 19's 3% rule):
 * cuCtxGetId (the reset check), a cuThreadExchangeStreamCaptureMode pair (the relaxed bracket),
 * cuStreamIsCapturing, cuStreamQuery of an idle stream, cuEventRecord and cuEventQuery (together
 * and apart), cuMemGetInfo, cuCtxGetCurrent and a cuCtxPushCurrent/PopCurrent pair, next to
 * cuLaunchKernel (enqueue only).
 * No library: the driver alone.
 *
 *   driver_calls FATBIN [N]     FATBIN: a blob with a kernel `empty` (run.py extracts one)
 *
 * Prints "name  ns-per-call" lines: medians of 7 batches of N calls.
 * Build: cc -O2 -I$CUDA/include driver_calls.c -lcuda
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#include "driver_setup.h"
#include "programs.h"

enum { OP_CTX_ID, OP_EXCHANGE, OP_IS_CAPTURING, OP_QUERY_IDLE, OP_EVENT, OP_MEMINFO, OP_CTX_GET,
       OP_PUSH_POP, OP_LAUNCH, OP_RECORD, OP_EVENT_QUERY, OP_COUNT };
static const char *names[OP_COUNT] = {
    "cuCtxGetId", "cuThreadExchangeStreamCaptureMode x2 (relaxed bracket)", "cuStreamIsCapturing",
    "cuStreamQuery (idle stream)", "cuEventRecord+cuEventQuery", "cuMemGetInfo", "cuCtxGetCurrent",
    "cuCtxPushCurrent+cuCtxPopCurrent", "cuLaunchKernel (enqueue only)",
    "cuEventRecord (idle stream)", "cuEventQuery (completed event)"};

static CUcontext ctx;
static CUstream s;
static CUevent ev;
static CUfunction fn;

static void run(int op, long n) {
  unsigned long long id;
  CUstreamCaptureMode m;
  CUstreamCaptureStatus st;
  size_t fr, tot;
  CUcontext c;
  for (long i = 0; i < n; ++i) {
    switch (op) {
    case OP_CTX_ID: CK(cuCtxGetId(ctx, &id)); break;
    case OP_EXCHANGE:
      m = CU_STREAM_CAPTURE_MODE_RELAXED;
      CK(cuThreadExchangeStreamCaptureMode(&m));
      CK(cuThreadExchangeStreamCaptureMode(&m));
      break;
    case OP_IS_CAPTURING: CK(cuStreamIsCapturing(s, &st)); break;
    case OP_QUERY_IDLE: CK(cuStreamQuery(s)); break;
    case OP_EVENT:
      CK(cuEventRecord(ev, s));
      (void)cuEventQuery(ev);
      break;
    case OP_MEMINFO: CK(cuMemGetInfo(&fr, &tot)); break;
    case OP_CTX_GET: CK(cuCtxGetCurrent(&c)); break;
    case OP_PUSH_POP:
      CK(cuCtxPushCurrent(ctx));
      CK(cuCtxPopCurrent(&c));
      break;
    case OP_LAUNCH:
      CK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
      if ((i & 1023) == 1023) CK(cuStreamSynchronize(s));
      break;
    case OP_RECORD: CK(cuEventRecord(ev, s)); break;
    case OP_EVENT_QUERY: (void)cuEventQuery(ev); break;
    }
  }
  CK(cuStreamSynchronize(s));
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FATBIN [N]\n", argv[0]);
    return 2;
  }
  long n = argc > 2 ? atol(argv[2]) : 20000;
  size_t size = 0;
  void *blob = read_file(argv[1], &size);
  if (!blob) return 1;
  CUmodule mod = driver_setup(blob, &ctx);
  CK(cuModuleGetFunction(&fn, mod, "empty"));
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
  printf("# driver calls, N=%ld, ns per call (median of 7 batches)\n", n);
  for (int op = 0; op < OP_COUNT; ++op) {
    run(op, n / 10); /* warm-up */
    double t[7];
    for (int r = 0; r < 7; ++r) {
      double t0 = now_us();
      run(op, n);
      t[r] = (now_us() - t0) * 1e3 / (double)n;
    }
    qsort(t, 7, sizeof *t, cmp_double);
    printf("%-56s %8.1f\n", names[op], t[3]);
  }
  return 0;
}
