/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* floor.c - the driver-level floor: the same kernels as the MLIR benchmark programs (the
 * gpu.binary blob extracted from their objects), launched straight through the CUDA driver API
 * with the module, the functions and the streams made once; launch + cuStreamSynchronize per
 * iteration. Nothing a runtime library could do per launch is cheaper than this.
 *
 *   floor PROGRAM FATBIN N REPS WARMUP
 *
 * PROGRAM: empty | stencil | async_prealloc (buffers made once, as the floor of the async step) |
 * async_alloc (three cuMemAllocManaged + cuMemFree per step, as the stock wrapper does, but with
 * no other per-step cost) | async_pool (the three buffers from the driver's own stream-ordered
 * allocator instead: cuMemAllocAsync on the stream of their first use, cuMemFreeAsync on the
 * combine's stream, the device's default memory pool keeping what is freed (release threshold
 * UINT64_MAX); device memory, not managed, and none of a runtime library's guarantees (no wait
 * for other streams' work before reuse, no clearing): what stream-ordered allocation costs the
 * driver itself) | async_mpool (the same from the driver's default pool of managed memory,
 * cuMemAllocFromPoolAsync, CUDA 13 and later: the same kind of memory as `gpu.alloc host_shared`). The driver's own limits of the graph path (issue 12), same kernels:
 * empty_graph (a one-node graph exec made once, cuGraphLaunch + sync), stencil_graph1 (one exec,
 * cuGraphExecKernelNodeSetParams with the swapped buffers before each cuGraphLaunch) and
 * stencil_graph2 (two execs made once, one per direction of the swap: no update). Same timing, hashing, CPU check and JSON line as harness.c; the async
 * programs add "kernel_us": GPU time of produce_a, produce_b, combine and of one whole step (from
 * the first producer's start to combine's end), medians over timed steps with events.
 * Build: cc -O2 -I$CUDA/include floor.c -lcuda -lm
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver_setup.h"
#include "programs.h"

static CUfunction fn_empty, fn_lap, fn_a, fn_b, fn_c;
static CUstream s1, s2, s3;
static double *ga, *gb;
static float *gx, *gy, *gacc, *gh[3];
static int alloc_per_step;

/* Kernel arguments as MLIR lowers them: each memref expands to its descriptor fields. */
typedef struct { void *alloc, *aligned; int64_t off, size, stride; } Desc1;
typedef struct { void *alloc, *aligned; int64_t off, s0, s1, t0, t1; } Desc2;
static Desc1 d1(float *p) { return (Desc1){p, p, 0, AS_N, 1}; }

static void *managed(size_t bytes) {
  CUdeviceptr p = 0;
  CK(cuMemAllocManaged(&p, bytes, CU_MEM_ATTACH_GLOBAL));
  return (void *)(uintptr_t)p;
}

static void launch_desc1(CUfunction f, CUstream s, Desc1 *d, int nd) {
  void *params[20];
  for (int i = 0; i < nd; ++i) {
    params[5 * i + 0] = &d[i].alloc;
    params[5 * i + 1] = &d[i].aligned;
    params[5 * i + 2] = &d[i].off;
    params[5 * i + 3] = &d[i].size;
    params[5 * i + 4] = &d[i].stride;
  }
  CK(cuLaunchKernel(f, 256, 1, 1, 256, 1, 1, 0, s, params, NULL));
}

/* One async step; with ev (6 events) it records around each kernel. */
static CUmemoryPool mpool; /* async_mpool: the default managed pool; else NULL (the device's) */

static void *pool_alloc(CUstream s) {
  CUdeviceptr p = 0;
  if (mpool)
    CK(cuMemAllocFromPoolAsync(&p, sizeof(float) * AS_N, mpool, s));
  else
    CK(cuMemAllocAsync(&p, sizeof(float) * AS_N, s));
  return (void *)(uintptr_t)p;
}

static void async_step(CUevent *ev) {
  float *h[3] = {gh[0], gh[1], gh[2]};
  if (alloc_per_step == 1)
    for (int i = 0; i < 3; ++i) h[i] = managed(sizeof(float) * AS_N);
  if (alloc_per_step == 2) h[0] = pool_alloc(s1), h[1] = pool_alloc(s2);
  Desc1 a[2] = {d1(gx), d1(h[0])}, b[2] = {d1(gy), d1(h[1])};
  Desc1 c[4] = {d1(h[0]), d1(h[1]), d1(h[2]), d1(gacc)};
  if (ev) CK(cuEventRecord(ev[0], s1));
  launch_desc1(fn_a, s1, a, 2);
  if (ev) CK(cuEventRecord(ev[1], s1));
  if (ev) CK(cuEventRecord(ev[2], s2));
  launch_desc1(fn_b, s2, b, 2);
  if (ev) CK(cuEventRecord(ev[3], s2));
  CK(cuStreamSynchronize(s1));
  CK(cuStreamSynchronize(s2));
  if (alloc_per_step == 2) h[2] = pool_alloc(s3);
  c[2] = d1(h[2]);
  if (ev) CK(cuEventRecord(ev[4], s3));
  launch_desc1(fn_c, s3, c, 4);
  if (ev) CK(cuEventRecord(ev[5], s3));
  if (alloc_per_step == 1)
    for (int i = 0; i < 3; ++i) CK(cuMemFree((CUdeviceptr)(uintptr_t)h[i]));
  if (alloc_per_step == 2)
    for (int i = 0; i < 3; ++i) CK(cuMemFreeAsync((CUdeviceptr)(uintptr_t)h[i], s3));
  CK(cuStreamSynchronize(s3));
}

static const char *program;
static CUgraphExec gexec[2];
static CUgraphNode gnode[2];

/* The stencil launch's node parameters for in -> out; `x`, `y`, `params` must outlive `p`'s use. */
static void stencil_params(CUDA_KERNEL_NODE_PARAMS *p, double *in, double *out, Desc2 *x,
                           Desc2 *y, void **params) {
  *x = (Desc2){in, in, 0, ST_N, ST_N, ST_N, 1};
  *y = (Desc2){out, out, 0, ST_N, ST_N, ST_N, 1};
  void *v[14] = {&x->alloc, &x->aligned, &x->off, &x->s0, &x->s1, &x->t0, &x->t1,
                 &y->alloc, &y->aligned, &y->off, &y->s0, &y->s1, &y->t0, &y->t1};
  memcpy(params, v, sizeof v);
  memset(p, 0, sizeof *p);
  p->func = fn_lap;
  p->gridDimX = 8, p->gridDimY = 1, p->gridDimZ = 1;
  p->blockDimX = 512, p->blockDimY = 1, p->blockDimZ = 1;
  p->kernelParams = params;
}

/* exec i: a one-node graph of `f` (params from p), instantiated once. */
static void make_exec(int i, CUDA_KERNEL_NODE_PARAMS *p) {
  CUgraph g;
  CK(cuGraphCreate(&g, 0));
  CK(cuGraphAddKernelNode(&gnode[i], g, NULL, 0, p));
  CK(cuGraphInstantiate(&gexec[i], g, 0));
}

static void run(long n) {
  if (!strcmp(program, "empty")) {
    for (long i = 0; i < n; ++i) {
      CK(cuLaunchKernel(fn_empty, 1, 1, 1, 1, 1, 1, 0, s1, NULL, NULL));
      CK(cuStreamSynchronize(s1));
    }
  } else if (!strcmp(program, "empty_graph")) {
    for (long i = 0; i < n; ++i) {
      CK(cuGraphLaunch(gexec[0], s1));
      CK(cuStreamSynchronize(s1));
    }
  } else if (!strcmp(program, "stencil_graph1")) {
    double *in = ga, *out = gb;
    for (long i = 0; i < n; ++i) {
      CUDA_KERNEL_NODE_PARAMS p;
      Desc2 x, y;
      void *params[14];
      stencil_params(&p, in, out, &x, &y, params);
      CK(cuGraphExecKernelNodeSetParams(gexec[0], gnode[0], &p));
      CK(cuGraphLaunch(gexec[0], s1));
      CK(cuStreamSynchronize(s1));
      double *t = in; in = out; out = t;
    }
  } else if (!strcmp(program, "stencil_graph2")) {
    for (long i = 0; i < n; ++i) { /* n is even: the result ends in ga, as with the others */
      CK(cuGraphLaunch(gexec[i & 1], s1));
      CK(cuStreamSynchronize(s1));
    }
  } else if (!strcmp(program, "stencil")) {
    double *in = ga, *out = gb;
    for (long i = 0; i < n; ++i) {
      Desc2 x = {in, in, 0, ST_N, ST_N, ST_N, 1}, y = {out, out, 0, ST_N, ST_N, ST_N, 1};
      void *params[14] = {&x.alloc, &x.aligned, &x.off, &x.s0, &x.s1, &x.t0, &x.t1,
                          &y.alloc, &y.aligned, &y.off, &y.s0, &y.s1, &y.t0, &y.t1};
      CK(cuLaunchKernel(fn_lap, 8, 1, 1, 512, 1, 1, 0, s1, params, NULL));
      CK(cuStreamSynchronize(s1));
      double *t = in; in = out; out = t;
    }
  } else {
    for (long i = 0; i < n; ++i) async_step(NULL);
  }
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: %s empty[_graph]|stencil[_graph1|_graph2]|async_prealloc|async_alloc|async_pool|async_mpool FATBIN N "
            "REPS WARMUP\n",
            argv[0]);
    return 2;
  }
  program = argv[1];
  long n = atol(argv[3]), warm = atol(argv[5]);
  int reps = atoi(argv[4]);
  if (n < 2 || reps < 1 || reps > 64 || warm < 0) return 2;
  n += n & 1;
  warm += warm & 1;
  int is_async = !strncmp(program, "async", 5);
  alloc_per_step = !strcmp(program, "async_alloc") ? 1 : !strcmp(program, "async_pool") || !strcmp(program, "async_mpool") ? 2 : 0;
  void *image = read_file(argv[2], NULL);
  CUmodule mod = driver_setup(image, NULL);
  CK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
  CK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
  CK(cuStreamCreate(&s3, CU_STREAM_NON_BLOCKING));
  if (!strncmp(program, "empty", 5)) {
    CK(cuModuleGetFunction(&fn_empty, mod, "empty"));
    if (!strcmp(program, "empty_graph")) {
      CUDA_KERNEL_NODE_PARAMS p;
      memset(&p, 0, sizeof p);
      p.func = fn_empty;
      p.gridDimX = p.gridDimY = p.gridDimZ = p.blockDimX = p.blockDimY = p.blockDimZ = 1;
      make_exec(0, &p);
    }
  } else if (!strncmp(program, "stencil", 7)) {
    CK(cuModuleGetFunction(&fn_lap, mod, "laplace"));
    ga = managed(sizeof(double) * ST_N * ST_N);
    gb = managed(sizeof(double) * ST_N * ST_N);
    stencil_init(ga, gb);
    if (strcmp(program, "stencil")) {
      CUDA_KERNEL_NODE_PARAMS p;
      Desc2 x, y;
      void *params[14];
      stencil_params(&p, ga, gb, &x, &y, params);
      make_exec(0, &p);
      stencil_params(&p, gb, ga, &x, &y, params);
      make_exec(1, &p);
    }
  } else if (is_async) {
    CK(cuModuleGetFunction(&fn_a, mod, "produce_a"));
    CK(cuModuleGetFunction(&fn_b, mod, "produce_b"));
    CK(cuModuleGetFunction(&fn_c, mod, "combine"));
    gx = managed(sizeof(float) * AS_N);
    gy = managed(sizeof(float) * AS_N);
    gacc = managed(sizeof(float) * AS_N);
    for (int i = 0; i < 3; ++i) gh[i] = managed(sizeof(float) * AS_N);
    async_init(gx, gy, gacc);
    if (alloc_per_step == 2) { /* the default pool keeps what is freed */
      CUdevice dev;
      CUmemoryPool pool;
      cuuint64_t keep = ~(cuuint64_t)0;
      CK(cuCtxGetDevice(&dev));
      CK(cuDeviceGetDefaultMemPool(&pool, dev));
      if (!strcmp(program, "async_mpool")) {
#if CUDA_VERSION >= 13000
        CUmemLocation none;
        memset(&none, 0, sizeof none);
        none.type = CU_MEM_LOCATION_TYPE_NONE;
        CK(cuMemGetDefaultMemPool(&pool, &none, CU_MEM_ALLOCATION_TYPE_MANAGED));
        mpool = pool;
#else
        fprintf(stderr, "floor: async_mpool needs CUDA 13's cuda.h\n");
        return 2;
#endif
      }
      CK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
    }
  } else {
    fprintf(stderr, "floor: unknown program %s\n", program);
    return 2;
  }
  double us[64];
  time_reps(run, warm, n, reps, us);
  uint64_t hash = FNV_SEED;
  char check[96] = "none", extra[256] = "";
  if (!strncmp(program, "stencil", 7)) {
    hash = fnv1a(ga, sizeof(double) * ST_N * ST_N, hash);
    stencil_init(ga, gb);
    run(CHECK_STEPS);
    double err = stencil_error(ga, CHECK_STEPS);
    snprintf(check, sizeof check, err < 1e-10 ? "ok" : "FAIL max abs error %g", err);
  } else if (is_async) {
    hash = fnv1a(gacc, sizeof(float) * AS_N, hash);
    /* GPU time per kernel and per step, with events (not part of the timed loop above) */
    enum { KS = 200 };
    static double ka[KS], kb[KS], kc[KS], kstep[KS];
    CUevent ev[6];
    for (int i = 0; i < 6; ++i) CK(cuEventCreate(&ev[i], CU_EVENT_DEFAULT));
    for (int s = 0; s < KS; ++s) {
      async_step(ev);
      float t[4];
      CK(cuEventElapsedTime(&t[0], ev[0], ev[1]));
      CK(cuEventElapsedTime(&t[1], ev[2], ev[3]));
      CK(cuEventElapsedTime(&t[2], ev[4], ev[5]));
      float s0, s2e;
      CK(cuEventElapsedTime(&s0, ev[0], ev[5]));
      CK(cuEventElapsedTime(&s2e, ev[2], ev[5]));
      ka[s] = t[0] * 1e3;
      kb[s] = t[1] * 1e3;
      kc[s] = t[2] * 1e3;
      kstep[s] = (s0 > s2e ? s0 : s2e) * 1e3;
    }
    qsort(ka, KS, sizeof(double), cmp_double);
    qsort(kb, KS, sizeof(double), cmp_double);
    qsort(kc, KS, sizeof(double), cmp_double);
    qsort(kstep, KS, sizeof(double), cmp_double);
    snprintf(extra, sizeof extra,
             "\"kernel_us\": {\"produce_a\": %.3f, \"produce_b\": %.3f, \"combine\": %.3f, "
             "\"step_span\": %.3f}",
             ka[KS / 2], kb[KS / 2], kc[KS / 2], kstep[KS / 2]);
    async_init(gx, gy, gacc);
    run(CHECK_STEPS);
    double err = async_error(gx, gy, gacc, CHECK_STEPS);
    snprintf(check, sizeof check, err < 1e-4 ? "ok" : "FAIL max rel error %g", err);
  }
  report(program, n, us, reps, hash, check, extra[0] ? extra : NULL);
  return strncmp(check, "FAIL", 4) == 0;
}
