/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
// driver_probe.cu - what the CUDA driver does in the situations issue 19 (the good neighbour) is
// about: capture safety of calls made by another thread (global vs relaxed capture mode), whether
// cuMemFree waits for unrelated busy streams, what giving memory back costs without a device-wide
// wait (stream-ordered pool + trim), the cost of cuMemGetInfo / capture-mode exchange, and what
// old objects report after cuDevicePrimaryCtxReset and after a device assert.
// Build: nvcc -O2 -o /tmp/probe benchmarks/neighbour/driver_probe.cu -lcuda -lpthread
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <assert.h>

__global__ void k_spin(volatile unsigned *flag, unsigned long long max_ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  while (*flag == 0) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t - t0 >= max_ns) break;
    __nanosleep(1000);
  }
}
__global__ void k_fill(unsigned *p, unsigned n, unsigned v) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = v;
}
__global__ void k_assert(int i) { assert(i == 12345); }

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static const char *en(CUresult r) {
  const char *s = 0;
  cuGetErrorName(r, &s);
  return s ? s : "?";
}
static CUcontext ctx;
static CUfunction f_spin, f_fill, f_assert;
static volatile unsigned *hflag;
static CUdeviceptr dflag;

static void get_fns(void) {
  // runtime-registered kernels: get driver handles through the runtime
  cudaFree(0);
  cudaGetFuncBySymbol(&f_spin, (const void *)k_spin);
  cudaGetFuncBySymbol(&f_fill, (const void *)k_fill);
  cudaGetFuncBySymbol(&f_assert, (const void *)k_assert);
}

static CUresult launch_spin(CUstream s, unsigned long long ns) {
  void *a[] = {(void *)&dflag, &ns};
  return cuLaunchKernel(f_spin, 1, 1, 1, 1, 1, 1, 0, s, a, NULL);
}
static CUresult launch_fill(CUstream s, CUdeviceptr p, unsigned v) {
  unsigned n = 256;
  void *a[] = {&p, &n, &v};
  return cuLaunchKernel(f_fill, 1, 1, 1, 256, 1, 1, 0, s, a, NULL);
}

/* ---- capture interaction: thread B makes one call while thread A captures (global mode) ---- */
typedef struct { int which; int relaxed; CUresult rc; } call_t;
static CUstream cs, other;
static CUdeviceptr scratch, tofree;
static const char *names[] = {"cuCtxSynchronize", "cuGraphInstantiate(+create,add node)",
                              "cuGraphLaunch(other stream)", "cuMemAlloc", "cuMemFree",
                              "cuStreamSynchronize(other idle stream)", "cuEventRecord+Query(other)",
                              "cuMemsetD32Async(other)", "cuStreamCreate+Destroy",
                              "cuEventCreate+Destroy", "cuMemGetInfo", "cuMemAllocManaged",
                              "cuModuleLoadData", "cuStreamQuery(other)", "cuLaunchKernel(other)",
                              "cuMemAllocAsync+FreeAsync(other)+sync", "cuMemPoolTrimTo",
                              "cuGraphExecDestroy", "cuStreamIsCapturing(other)"};
#define NCALLS 19
static CUgraphExec pre_exec;
static CUmemoryPool pool;
static const char *ptx_text =
    ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry e()\n{\n ret;\n}\n";

static void *call_thread(void *arg) {
  call_t *c = (call_t *)arg;
  cuCtxSetCurrent(ctx);
  CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
  if (c->relaxed) cuThreadExchangeStreamCaptureMode(&m);
  CUresult r = CUDA_SUCCESS;
  switch (c->which) {
    case 0: r = cuCtxSynchronize(); break;
    case 1: {
      CUgraph g; CUgraphNode n; CUgraphExec e;
      CUDA_KERNEL_NODE_PARAMS p; memset(&p, 0, sizeof p);
      unsigned nn = 256, v = 3; void *a[] = {&scratch, &nn, &v};
      p.func = f_fill; p.gridDimX = p.gridDimY = p.gridDimZ = 1; p.blockDimX = 256;
      p.blockDimY = p.blockDimZ = 1; p.kernelParams = a;
      r = cuGraphCreate(&g, 0);
      if (!r) r = cuGraphAddKernelNode(&n, g, NULL, 0, &p);
      if (!r) r = cuGraphInstantiate(&e, g, 0);
      break;
    }
    case 2: r = cuGraphLaunch(pre_exec, other); if (!r) r = cuStreamSynchronize(other); break;
    case 3: { CUdeviceptr d; r = cuMemAlloc(&d, 1 << 20); break; }
    case 4: r = cuMemFree(tofree); break;
    case 5: r = cuStreamSynchronize(other); break;
    case 6: { CUevent e; cuEventCreate(&e, CU_EVENT_DISABLE_TIMING); r = cuEventRecord(e, other);
              if (!r) r = cuEventQuery(e); break; }
    case 7: r = cuMemsetD32Async(scratch, 0, 64, other); break;
    case 8: { CUstream s; r = cuStreamCreate(&s, CU_STREAM_NON_BLOCKING); if (!r) r = cuStreamDestroy(s); break; }
    case 9: { CUevent e; r = cuEventCreate(&e, CU_EVENT_DISABLE_TIMING); if (!r) r = cuEventDestroy(e); break; }
    case 10: { size_t f, t; r = cuMemGetInfo(&f, &t); break; }
    case 11: { CUdeviceptr d; r = cuMemAllocManaged(&d, 1 << 20, CU_MEM_ATTACH_GLOBAL); break; }
    case 12: { CUmodule m2; r = cuModuleLoadData(&m2, ptx_text); break; }
    case 13: r = cuStreamQuery(other); break;
    case 14: r = launch_fill(other, scratch, 5); break;
    case 15: { CUdeviceptr d; r = cuMemAllocFromPoolAsync(&d, 1 << 20, pool, other);
               if (!r) r = cuMemFreeAsync(d, other); if (!r) r = cuStreamSynchronize(other); break; }
    case 16: r = cuMemPoolTrimTo(pool, 0); break;
    case 17: r = cuGraphExecDestroy(pre_exec); pre_exec = NULL; break;
    case 18: { CUstreamCaptureStatus st; r = cuStreamIsCapturing(other, &st); break; }
  }
  if (c->relaxed) cuThreadExchangeStreamCaptureMode(&m);
  c->rc = r;
  return NULL;
}

static void make_pre_exec(void) {
  CUgraph g; CUgraphNode n;
  CUDA_KERNEL_NODE_PARAMS p; memset(&p, 0, sizeof p);
  unsigned nn = 256, v = 3; void *a[] = {&scratch, &nn, &v};
  p.func = f_fill; p.gridDimX = p.gridDimY = p.gridDimZ = 1; p.blockDimX = 256;
  p.blockDimY = p.blockDimZ = 1; p.kernelParams = a;
  cuGraphCreate(&g, 0); cuGraphAddKernelNode(&n, g, NULL, 0, &p);
  cuGraphInstantiate(&pre_exec, g, 0);
}

static void capture_matrix(void) {
  printf("== capture: thread A captures cs in GLOBAL mode; thread B makes one call\n");
  for (int relaxed = 0; relaxed < 2; ++relaxed) {
    for (int w = 0; w < NCALLS; ++w) {
      cuMemAlloc(&scratch, 4096);
      cuMemAlloc(&tofree, 4096);
      if (w == 2 || w == 17) make_pre_exec();
      CUresult rb = cuStreamBeginCapture(cs, CU_STREAM_CAPTURE_MODE_GLOBAL);
      CUresult r1 = launch_fill(cs, scratch, 1);
      call_t c = {w, relaxed, CUDA_SUCCESS};
      pthread_t t;
      pthread_create(&t, NULL, call_thread, &c);
      pthread_join(t, NULL);
      CUresult r2 = launch_fill(cs, scratch, 2);
      CUstreamCaptureStatus st;
      cuStreamIsCapturing(cs, &st);
      CUgraph g = NULL;
      CUresult re = cuStreamEndCapture(cs, &g);
      if (g) cuGraphDestroy(g);
      cuCtxSynchronize();
      printf("  B %-8s %-42s -> %-36s | A: begin=%s launch=%s,%s status=%d end=%s\n",
             relaxed ? "relaxed" : "global", names[w], en(c.rc), en(rb), en(r1), en(r2), (int)st,
             en(re));
      cudaGetLastError();
    }
  }
}

/* ---- cuMemFree while an unrelated stream is busy ---- */
static void memfree_busy(void) {
  printf("== give-back while an unrelated stream runs a 1 s host-waiting kernel\n");
  CUstream s1, s2;
  cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING);
  cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING);
  CUdeviceptr p;
  cuMemAlloc(&p, 64 << 20);
  cuCtxSynchronize();
  *hflag = 0;
  launch_spin(s1, 1000000000ull);
  double t0 = now();
  CUresult r = cuMemFree(p);
  printf("  cuMemFree(idle 64 MiB block): %s after %.3f s\n", en(r), now() - t0);
  cuCtxSynchronize();
  // managed
  cuMemAllocManaged(&p, 1 << 20, CU_MEM_ATTACH_GLOBAL);
  cuCtxSynchronize();
  launch_spin(s1, 1000000000ull);
  t0 = now();
  r = cuMemFree(p);
  printf("  cuMemFree(idle managed block): %s after %.3f s\n", en(r), now() - t0);
  cuCtxSynchronize();
  // pool: alloc, (idle), free async on an idle stream, sync it, trim
  CUdeviceptr q;
  size_t before, after, tot;
  cuMemAllocFromPoolAsync(&q, 512 << 20, pool, s2);
  cuStreamSynchronize(s2);
  launch_spin(s1, 1000000000ull);
  cuMemGetInfo(&before, &tot);
  t0 = now();
  r = cuMemFreeAsync(q, s2);
  CUresult r2 = cuStreamSynchronize(s2);
  CUresult r3 = cuMemPoolTrimTo(pool, 0);
  double dt = now() - t0;
  cuMemGetInfo(&after, &tot);
  printf("  pool: cuMemFreeAsync(512 MiB, idle stream)=%s + sync=%s + cuMemPoolTrimTo=%s: %.6f s; free memory %+.1f MiB\n",
         en(r), en(r2), en(r3), dt, ((double)after - (double)before) / 1048576.0);
  // alloc from pool while busy
  t0 = now();
  r = cuMemAllocFromPoolAsync(&q, 512 << 20, pool, s2);
  r2 = cuStreamSynchronize(s2);
  printf("  pool alloc(512 MiB)+sync of idle stream while busy: %s %s %.6f s\n", en(r), en(r2), now() - t0);
  // cuMemAlloc while busy
  t0 = now();
  r = cuMemAlloc(&p, 64 << 20);
  printf("  cuMemAlloc(64 MiB) while busy: %s %.6f s\n", en(r), now() - t0);
  cuCtxSynchronize();
  cuMemFree(p);
  cuMemFreeAsync(q, s2);
  cuStreamSynchronize(s2);
  cuMemPoolTrimTo(pool, 0);
}

static void costs(void) {
  printf("== costs (median of 2000, ns)\n");
  static double v[2000];
  const char *what[] = {"cuMemGetInfo", "cuThreadExchangeStreamCaptureMode x2", "cuStreamIsCapturing",
                        "cuStreamGetCaptureInfo", "cuCtxGetCurrent", "cuCtxSynchronize(idle)",
                        "cuEventRecord+cuEventQuery", "cuStreamQuery(idle)", "cuCtxGetId"};
  CUstream s; cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
  CUevent e; cuEventCreate(&e, CU_EVENT_DISABLE_TIMING);
  for (int k = 0; k < 9; ++k) {
    for (int i = 0; i < 2000; ++i) {
      double t0 = now();
      size_t a, b; CUcontext c; unsigned long long id;
      CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
      CUstreamCaptureStatus st;
      switch (k) {
        case 0: cuMemGetInfo(&a, &b); break;
        case 1: cuThreadExchangeStreamCaptureMode(&m); cuThreadExchangeStreamCaptureMode(&m); break;
        case 2: cuStreamIsCapturing(s, &st); break;
        case 3: cuStreamGetCaptureInfo(s, &st, NULL, NULL, NULL, NULL, NULL); break;
        case 4: cuCtxGetCurrent(&c); break;
        case 5: cuCtxSynchronize(); break;
        case 6: cuEventRecord(e, s); cuEventQuery(e); break;
        case 7: cuStreamQuery(s); break;
        case 8: cuCtxGetId(ctx, &id); break;
      }
      v[i] = (now() - t0) * 1e9;
    }
    // median
    for (int i = 1; i < 2000; ++i) { double x = v[i]; int j = i - 1; while (j >= 0 && v[j] > x) { v[j + 1] = v[j]; --j; } v[j + 1] = x; }
    printf("  %-40s %.0f\n", what[k], v[1000]);
  }
}

/* ---- device reset: what old objects report; does the primary context come back by itself ---- */
static void reset_probe(void) {
  printf("== cuDevicePrimaryCtxReset: old objects afterwards\n");
  CUstream s; CUevent e; CUdeviceptr p; CUmodule m; CUfunction fn;
  cuCtxSetCurrent(ctx);
  cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
  cuEventCreate(&e, CU_EVENT_DISABLE_TIMING);
  cuMemAlloc(&p, 4096);
  cuModuleLoadData(&m, ptx_text);
  cuModuleGetFunction(&fn, m, "e");
  unsigned long long id0 = 0, id1 = 0;
  cuCtxGetId(ctx, &id0);
  CUresult r = cuDevicePrimaryCtxReset(0);
  printf("  reset=%s\n", en(r));
  CUcontext cur = NULL; cuCtxGetCurrent(&cur);
  printf("  current after reset: %p (old %p)\n", (void *)cur, (void *)ctx);
  printf("  cuCtxGetId(old ctx)=%s\n", en(cuCtxGetId(ctx, &id1)));
  printf("  cuCtxPushCurrent(old)=%s\n", en(cuCtxPushCurrent(ctx)));
  CUcontext popped; cuCtxPopCurrent(&popped);
  printf("  cuStreamQuery(old)=%s\n", en(cuStreamQuery(s)));
  printf("  cuEventQuery(old)=%s\n", en(cuEventQuery(e)));
  printf("  cuLaunchKernel(old fn, NULL stream)=%s\n", en(cuLaunchKernel(fn, 1,1,1,1,1,1,0,NULL,NULL,NULL)));
  printf("  cuMemFree(old)=%s\n", en(cuMemFree(p)));
  printf("  cuModuleUnload(old)=%s\n", en(cuModuleUnload(m)));
  printf("  cuStreamDestroy(old)=%s\n", en(cuStreamDestroy(s)));
  CUcontext c2; CUdevice d; cuDeviceGet(&d, 0);
  unsigned flags; int active;
  cuDevicePrimaryCtxGetState(d, &flags, &active);
  printf("  primary active after reset: %d\n", active);
  r = cuDevicePrimaryCtxRetain(&c2, d);
  cuCtxGetId(c2, &id1);
  printf("  retain again=%s ctx %p (same pointer: %d) id %llu -> %llu\n", en(r), (void *)c2, c2 == ctx, id0, id1);
  cuCtxSetCurrent(c2);
  CUstream s2; printf("  cuStreamCreate in new=%s\n", en(cuStreamCreate(&s2, 1)));
  printf("  cuCtxSynchronize=%s\n", en(cuCtxSynchronize()));
  ctx = c2;
}

static void assert_probe(void) {
  printf("== device assert: what later calls return\n");
  CUstream s; cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
  CUdeviceptr p; cuMemAlloc(&p, 4096);
  CUevent e; cuEventCreate(&e, CU_EVENT_DISABLE_TIMING);
  int i = 1; void *a[] = {&i};
  cuLaunchKernel(f_assert, 1,1,1,1,1,1,0,s,a,NULL);
  printf("  cuStreamSynchronize=%s\n", en(cuStreamSynchronize(s)));
  printf("  cuStreamQuery=%s\n", en(cuStreamQuery(s)));
  printf("  cuCtxGetCurrent ok? %s\n", en(cuCtxGetCurrent(&ctx)));
  printf("  cuEventRecord=%s cuEventQuery=%s\n", en(cuEventRecord(e, s)), en(cuEventQuery(e)));
  CUstream s2; printf("  cuStreamCreate=%s\n", en(cuStreamCreate(&s2, 1)));
  CUevent e2; printf("  cuEventCreate=%s\n", en(cuEventCreate(&e2, 2)));
  CUdeviceptr q; printf("  cuMemAlloc=%s\n", en(cuMemAlloc(&q, 4096)));
  printf("  cuMemFree=%s\n", en(cuMemFree(p)));
  CUmodule m; printf("  cuModuleLoadData=%s\n", en(cuModuleLoadData(&m, ptx_text)));
  printf("  cuLaunchKernel=%s\n", en(launch_fill(s, p, 1)));
  printf("  cuMemsetD32Async=%s\n", en(cuMemsetD32Async(p, 0, 4, s)));
  printf("  cuCtxSynchronize=%s\n", en(cuCtxSynchronize()));
  size_t f, t; printf("  cuMemGetInfo=%s\n", en(cuMemGetInfo(&f, &t)));
  unsigned long long id; printf("  cuCtxGetId=%s\n", en(cuCtxGetId(ctx, &id)));
  printf("  cuStreamDestroy=%s cuEventDestroy=%s\n", en(cuStreamDestroy(s)), en(cuEventDestroy(e)));
  CUresult r = cuDevicePrimaryCtxReset(0);
  CUdevice d; cuDeviceGet(&d, 0); CUcontext c2; cuDevicePrimaryCtxRetain(&c2, d); cuCtxSetCurrent(c2);
  printf("  after reset=%s: cuStreamCreate=%s\n", en(r), en(cuStreamCreate(&s2, 1)));
}

int main(int argc, char **argv) {
  cuInit(0);
  CUdevice d; cuDeviceGet(&d, 0);
  cuDevicePrimaryCtxRetain(&ctx, d);
  cuCtxSetCurrent(ctx);
  get_fns();
  cuMemHostAlloc((void **)&hflag, 4096, CU_MEMHOSTALLOC_DEVICEMAP);
  cuMemHostGetDevicePointer(&dflag, (void *)hflag, 0);
  cuStreamCreate(&cs, CU_STREAM_NON_BLOCKING);
  cuStreamCreate(&other, CU_STREAM_NON_BLOCKING);
  CUmemPoolProps pp; memset(&pp, 0, sizeof pp);
  pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED; pp.location.type = CU_MEM_LOCATION_TYPE_DEVICE; pp.location.id = 0;
  printf("pool create=%s\n", en(cuMemPoolCreate(&pool, &pp)));
  const char *only = argc > 1 ? argv[1] : "all";
  if (!strcmp(only, "all") || !strcmp(only, "costs")) costs();
  if (!strcmp(only, "all") || !strcmp(only, "capture")) capture_matrix();
  if (!strcmp(only, "all") || !strcmp(only, "free")) memfree_busy();
  if (!strcmp(only, "all") || !strcmp(only, "reset")) reset_probe();
  if (!strcmp(only, "assert")) assert_probe();
  return 0;
}
