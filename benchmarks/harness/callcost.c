/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* callcost.c - host time of each mgpu* call of a synchronous MLIR launch, next to the driver
 * calls it stands for: where the runtime's per-launch time goes. Links libmgpu_cached (or the
 * stock-named copy); MGPU_CACHED_DISABLE=1 gives the stock behaviour.
 *
 *   callcost FATBIN [N]      FATBIN: blob with a kernel `empty` (run.py extracts one)
 *
 * Prints "name  ns-per-call" lines: medians of 7 batches of N calls.
 * Build: cc -O2 -I$CUDA/include callcost.c -lmgpu_cached -lcuda
 */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "programs.h"

#include "../../csrc/include/mgpu_abi.h"

static void *blob;
static size_t blob_size;
static void *mod, *fn, *kept;
static CUfunction cfn;
static CUstream cs;

enum { OP_LOAD_UNLOAD, OP_GETFN, OP_STREAM, OP_LAUNCH, OP_SYNC_IDLE, OP_SEQ22, OP_SEQ19,
       OP_CU_LAUNCH, OP_CU_SYNC_IDLE, OP_CU_LAUNCH_SYNC, OP_CU_CTXGET, OP_MGPU_LAUNCH_SYNC,
       OP_CU_GRAPH_LAUNCH, OP_CU_GRAPH_SET_LAUNCH, OP_CU_GRAPH_SYNC, OP_CU_GRAPH_SET_SYNC,
       OP_CU_PUSH_POP, OP_COUNT };
static const char *names[OP_COUNT] = {
    "mgpuModuleLoad+mgpuModuleUnload", "mgpuModuleGetFunction", "mgpuStreamCreate+Destroy",
    "mgpuLaunchKernel (enqueue only)", "mgpuStreamSynchronize (idle)",
    "LLVM22 sequence (get, create, launch, sync, destroy)", "LLVM19 sequence (+load, unload)",
    "cuLaunchKernel (enqueue only)", "cuStreamSynchronize (idle)",
    "cuLaunchKernel+cuStreamSynchronize (floor)", "cuCtxGetCurrent",
    "mgpuLaunchKernel+mgpuStreamSynchronize (kept stream)",
    "cuGraphLaunch, 1-node exec (enqueue only)",
    "cuGraphExecKernelNodeSetParams+cuGraphLaunch (enqueue)",
    "cuGraphLaunch+cuStreamSynchronize", "SetParams+cuGraphLaunch+cuStreamSynchronize",
    "cuCtxPushCurrent+cuCtxPopCurrent"};
static CUgraphExec gexec;
static CUcontext pctx;
static CUgraphNode gnode;
static CUDA_KERNEL_NODE_PARAMS gparams;

static void seq22(void *m) {
  void *f = mgpuModuleGetFunction(m, "empty");
  void *s = mgpuStreamCreate();
  mgpuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL, 0);
  mgpuStreamSynchronize(s);
  mgpuStreamDestroy(s);
}

static void op(int which, long n) {
  for (long i = 0; i < n; ++i) switch (which) {
    case OP_LOAD_UNLOAD: mgpuModuleUnload(mgpuModuleLoad(blob, blob_size)); break;
    case OP_GETFN: fn = mgpuModuleGetFunction(mod, "empty"); break;
    case OP_STREAM: mgpuStreamDestroy(mgpuStreamCreate()); break;
    case OP_LAUNCH:
      mgpuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, kept, NULL, NULL, 0);
      if ((i & 255) == 255) mgpuStreamSynchronize(kept); /* keep the queue short */
      break;
    case OP_SYNC_IDLE: mgpuStreamSynchronize(kept); break;
    case OP_SEQ22: seq22(mod); break;
    case OP_SEQ19: {
      void *m = mgpuModuleLoad(blob, blob_size);
      seq22(m);
      mgpuModuleUnload(m);
      break;
    }
    case OP_CU_LAUNCH:
      cuLaunchKernel(cfn, 1, 1, 1, 1, 1, 1, 0, cs, NULL, NULL);
      if ((i & 255) == 255) cuStreamSynchronize(cs);
      break;
    case OP_CU_SYNC_IDLE: cuStreamSynchronize(cs); break;
    case OP_CU_LAUNCH_SYNC:
      cuLaunchKernel(cfn, 1, 1, 1, 1, 1, 1, 0, cs, NULL, NULL);
      cuStreamSynchronize(cs);
      break;
    case OP_MGPU_LAUNCH_SYNC:
      mgpuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, kept, NULL, NULL, 0);
      mgpuStreamSynchronize(kept);
      break;
    case OP_CU_GRAPH_LAUNCH:
    case OP_CU_GRAPH_SET_LAUNCH:
      if (which == OP_CU_GRAPH_SET_LAUNCH) cuGraphExecKernelNodeSetParams(gexec, gnode, &gparams);
      cuGraphLaunch(gexec, cs);
      if ((i & 255) == 255) cuStreamSynchronize(cs);
      break;
    case OP_CU_GRAPH_SYNC:
    case OP_CU_GRAPH_SET_SYNC:
      if (which == OP_CU_GRAPH_SET_SYNC) cuGraphExecKernelNodeSetParams(gexec, gnode, &gparams);
      cuGraphLaunch(gexec, cs);
      cuStreamSynchronize(cs);
      break;
    case OP_CU_PUSH_POP: {
      CUcontext c;
      cuCtxPushCurrent(pctx);
      cuCtxPopCurrent(&c);
      break;
    }
    case OP_CU_CTXGET: {
      CUcontext c;
      cuCtxGetCurrent(&c);
      break;
    }
  }
  mgpuStreamSynchronize(kept);
  cuStreamSynchronize(cs);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FATBIN [N]\n", argv[0]);
    return 2;
  }
  long n = argc > 2 ? atol(argv[2]) : 2000;
  blob = read_file(argv[1], &blob_size);
  mod = mgpuModuleLoad(blob, blob_size);
  fn = mgpuModuleGetFunction(mod, "empty");
  kept = mgpuStreamCreate();
  if (!mod || !fn || !kept) return fprintf(stderr, "callcost: mgpu setup failed\n"), 2;
  /* the driver-level side, in the primary context (current after the library's calls?) */
  CUdevice dev;
  CUcontext ctx;
  CUmodule cm;
  cuInit(0);
  cuDeviceGet(&dev, 0);
  cuDevicePrimaryCtxRetain(&ctx, dev);
  cuCtxSetCurrent(ctx);
  pctx = ctx;
  if (cuModuleLoadData(&cm, blob) || cuModuleGetFunction(&cfn, cm, "empty") ||
      cuStreamCreate(&cs, CU_STREAM_NON_BLOCKING))
    return fprintf(stderr, "callcost: driver setup failed\n"), 2;
  CUgraph g;
  memset(&gparams, 0, sizeof gparams);
  gparams.func = cfn;
  gparams.gridDimX = gparams.gridDimY = gparams.gridDimZ = 1;
  gparams.blockDimX = gparams.blockDimY = gparams.blockDimZ = 1;
  if (cuGraphCreate(&g, 0) || cuGraphAddKernelNode(&gnode, g, NULL, 0, &gparams) ||
      cuGraphInstantiate(&gexec, g, 0))
    return fprintf(stderr, "callcost: graph setup failed\n"), 2;
  const char *graph = getenv("MGPU_CACHED_GRAPH");
  printf("# %s, N=%ld, ns per call (median of 7 batches)\n",
         getenv("MGPU_CACHED_DISABLE") ? "stock behaviour"
         : (graph && !strcmp(graph, "0")) ? "cached, graph path off (MGPU_CACHED_GRAPH=0)"
                                          : "cached", n);
  for (int w = 0; w < OP_COUNT; ++w) {
    double t[7];
    op(w, n / 4); /* warm-up */
    for (int b = 0; b < 7; ++b) {
      double t0 = now_us();
      op(w, n);
      t[b] = (now_us() - t0) * 1e3 / (double)n;
    }
    qsort(t, 7, sizeof(double), cmp_double);
    printf("%-52s %9.1f\n", names[w], t[3]);
  }
  return 0;
}
