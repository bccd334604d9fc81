/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* launch_threads.c - kernel launch throughput from 1..16 host threads (issue 4).
 *
 *   launch_threads MODE BLOB LAUNCHES THREADS...
 *
 * Each thread takes its own stream, waits at a barrier, launches the empty kernel `empty` of BLOB
 * LAUNCHES times (asynchronously) and synchronises its stream; the time from the barrier to the
 * last thread's end gives launches per second. Prints "MODE THREADS launches_per_s" per count.
 *   driver     the CUDA driver directly (cuLaunchKernel on a module loaded once): the reference
 *   mgpu       mgpuLaunchKernel with a function resolved once (what any caller pays per launch)
 *   mgpu-load  per launch what LLVM <= 20 code does: mgpuModuleLoad, mgpuModuleGetFunction,
 *              mgpuLaunchKernel, mgpuModuleUnload (the module cache's hit path under threads),
 *              the blob read from BLOB into the heap, as the JIT runner has it (each hit compares
 *              its bytes)
 *   mgpu-load-exe  the same with the blob in this executable's .rodata, where a program linked
 *              from MLIR's AOT object has it (never compared): linked in between the symbols
 *              chain_blob_start / chain_blob_end (throughput.py assembles them from BLOB)
 * The mgpu modes use whatever libmgpu_cached does (MGPU_CACHED_DISABLE=1: the stock behaviour).
 * Modes that locate a loss (issue 21), each the driver loop or an mgpu mode with one thing changed:
 *   driver-scoped  the driver loop in a thread with no current context, the primary context
 *              pushed and popped around each cuLaunchKernel: what the stock wrapper (ScopedContext)
 *              and the library (context.h, mc_ctx_enter) do in such a thread, the worker threads of
 *              the mgpu modes included; the driver's own cost of the same work
 *   driver-graph   each thread launches its own one-node graph exec of the kernel on its own
 *              stream (cuGraphLaunch): the bound of the library's graph path under threads
 *   mgpu-current / mgpu-load-current   the mgpu modes in threads that made the primary context
 *              current first (cuCtxSetCurrent): the library then pushes no context per launch
 *   driver-nocontext-checks   driver-nocontext with the two driver calls the library's bare
 *              launch of LLVM <= 20 code makes beside it: cuCtxGetCurrent (is a context current?)
 *              and cuCtxGetId (the module load's reset check, context.h): their bound under threads
 *   LT_SPIN_NS=N in the environment: the driver modes spin for N ns of host work (a counted
 *              loop, calibrated at start) before each launch: what host work beside the driver's costs under threads
 *              (issue 21: how much of a loss a runtime's own work per launch can explain)
 *   LT_COMPARE=1 in the environment: the driver modes compare BLOB's bytes on the heap with a
 *              copy before each launch (memcmp), as a verified module cache must at every load of
 *              a blob it cannot prove unchanged (mgpu-load's heap blob): the bound of that shape
 *   paired-mgpu / paired-mgpu-load / paired-mgpu-load-exe   the bound (driver-nocontext-checks)
 *              and that mgpu mode in ONE process, in alternating blocks of LAUNCHES launches per
 *              thread (LT_BLOCKS blocks, default 16, in the order bound, mode, mode, bound, ...),
 *              every thread on its own driver stream and its own library stream, each block timed
 *              from a barrier to the end of its threads' synchronisations: a process's own speed
 *              level (issue 21: it moves a mode by +-5% between processes) cancels in the ratio of
 *              adjacent blocks. Prints "MODE THREADS bound_per_s mode_per_s ratio", the ratio the
 *              median over block pairs of mode / bound (with LT_COMPARE=1 the bound compares
 *              the heap blob per launch too: the heap shape's bound)
 *   driver-nocontext / driver-graph-nocontext   a probe: cuLaunchKernel / cuGraphLaunch on the
 *              thread's stream with NO context current and none pushed (the stream names its
 *              context); whether the driver accepts that (else "failed: <code>" and exit 1) and
 *              what it costs tell whether a launch path without the per-launch push / pop could
 *              exist (issue 21, threads)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../csrc/include/mgpu_abi.h"

typedef int (*fn_t)();
extern const char chain_blob_start[] __attribute__((weak)); /* mgpu-load-exe's blob */
extern const char chain_blob_end[] __attribute__((weak));
static fn_t cuInit_, cuDeviceGet_, cuDevicePrimaryCtxRetain_, cuCtxSetCurrent_, cuModuleLoadData_,
    cuModuleGetFunction_, cuStreamCreate_, cuStreamSynchronize_, cuStreamDestroy_,
    cuCtxPushCurrent_, cuCtxPopCurrent_, cuGraphCreate_, cuGraphAddKernelNode_,
    cuGraphInstantiate_, cuGraphLaunch_, cuCtxGetCurrent_, cuCtxGetId_;

/* CUDA 12's kernel node parameters (cuGraphAddKernelNode_v2), as csrc/platform/cuda_api.h. */
typedef struct {
  void *func;
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  void **kernelParams, **extra;
  void *kern, *ctx;
} node_params;
static int (*cuLaunchKernel_)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, void *, void **, void **);

static const char *g_mode;
static unsigned char *g_blob;
static size_t g_len;
static long g_launches;
static void *g_ctx, *g_dfunc, *g_mfunc;
static pthread_barrier_t g_start;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static long g_spin_ns; /* LT_SPIN_NS: host work before each launch of the driver modes */
static unsigned char *g_copy; /* LT_COMPARE=1: a copy of the heap blob, compared before each launch */

static long g_spin_iters; /* iterations of spin_loop that take g_spin_ns (calibrated at start) */

static void spin_loop(long n) {
  for (volatile long i = 0; i < n; i = i + 1) {
  }
}

/* g_spin_iters from the loop's speed over 50 ms: a clock read costs ~20 ns itself, so spins of
 * 25-100 ns are a counted loop, not a loop of clock reads. */
static void spin_calibrate(void) {
  if (g_spin_ns <= 0) return;
  long n = 1000000;
  double t0 = now();
  long runs = 0;
  while (now() - t0 < 0.05) {
    spin_loop(n);
    ++runs;
  }
  double ns_per_iter = (now() - t0) * 1e9 / ((double)runs * (double)n);
  g_spin_iters = (long)((double)g_spin_ns / ns_per_iter + 0.5);
}

static void spin(void) {
  if (g_spin_iters > 0) spin_loop(g_spin_iters);
}

#define CK(x)                                                                                     \
  do {                                                                                            \
    int r_ = (x);                                                                                 \
    if (r_) {                                                                                     \
      fprintf(stderr, "%s failed: %d\n", #x, r_);                                                 \
      exit(1);                                                                                    \
    }                                                                                             \
  } while (0)

static void *worker(void *arg) {
  (void)arg;
  void *s = NULL, *exec = NULL;
  int scoped = !strcmp(g_mode, "driver-scoped"), graph = !strncmp(g_mode, "driver-graph", 12);
  int bare = strstr(g_mode, "-nocontext") != NULL; /* no context current while launching */
  int driver = !strncmp(g_mode, "driver", 6), load = !strncmp(g_mode, "mgpu-load", 9);
  int current = strstr(g_mode, "-current") != NULL;
  int checks = strstr(g_mode, "-checks") != NULL; /* cuCtxGetCurrent + cuCtxGetId per launch */
  if (driver) {
    CK(cuCtxSetCurrent_(g_ctx));
    CK(cuStreamCreate_(&s, 1));
    if (graph) {
      void *g = NULL, *node = NULL;
      node_params p = {g_dfunc, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL, NULL};
      CK(cuGraphCreate_(&g, 0));
      CK(cuGraphAddKernelNode_(&node, g, NULL, (size_t)0, &p));
      CK(cuGraphInstantiate_(&exec, g, (unsigned long long)0));
    }
    if (scoped || bare) CK(cuCtxSetCurrent_(NULL)); /* as a thread that never made one current */
  } else {
    if (current) CK(cuCtxSetCurrent_(g_ctx));
    s = mgpuStreamCreate();
  }
  pthread_barrier_wait(&g_start);
  for (long i = 0; i < g_launches; ++i) {
    if (graph) {
      CK(cuGraphLaunch_(exec, s));
    } else if (scoped) {
      void *popped = NULL;
      CK(cuCtxPushCurrent_(g_ctx));
      CK(cuLaunchKernel_(g_dfunc, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
      CK(cuCtxPopCurrent_(&popped));
    } else if (driver) {
      spin();
      if (g_copy && memcmp(g_copy, g_blob, g_len) != 0) {
        fprintf(stderr, "blob changed\n");
        exit(1);
      }
      if (checks) {
        void *cur = NULL;
        unsigned long long id = 0;
        CK(cuCtxGetCurrent_(&cur));
        CK(cuCtxGetId_(g_ctx, &id));
      }
      CK(cuLaunchKernel_(g_dfunc, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    } else if (load) {
      void *m = mgpuModuleLoad(g_blob, g_len);
      void *f = mgpuModuleGetFunction(m, "empty");
      mgpuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL, 0);
      mgpuModuleUnload(m);
    } else {
      mgpuLaunchKernel(g_mfunc, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL, 0);
    }
  }
  if (driver) {
    if (scoped || bare) CK(cuCtxSetCurrent_(g_ctx));
    CK(cuStreamSynchronize_(s));
    CK(cuStreamDestroy_(s));
  } else {
    mgpuStreamSynchronize(s);
    mgpuStreamDestroy(s);
  }
  return NULL;
}

/* ---- paired modes ---- */

static int g_blocks = 16;
static double g_block_t0, g_block_dt[256];

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Block b's kind: 0 the bound, 1 the mgpu mode (bound, mode, mode, bound, bound, mode, ...). */
static int block_kind(int b) { return ((b + 1) / 2) % 2; }

static void *paired_worker(void *arg) {
  (void)arg;
  void *ds = NULL;
  int load = strstr(g_mode, "mgpu-load") != NULL;
  CK(cuCtxSetCurrent_(g_ctx));
  CK(cuStreamCreate_(&ds, 1));
  CK(cuCtxSetCurrent_(NULL)); /* as a thread that never made one current */
  void *s = mgpuStreamCreate();
  for (int b = 0; b < g_blocks; ++b) {
    pthread_barrier_wait(&g_start); /* main notes the block's start */
    pthread_barrier_wait(&g_start);
    if (block_kind(b) == 0) {
      for (long i = 0; i < g_launches; ++i) {
        void *cur = NULL;
        unsigned long long id = 0;
        if (g_copy && memcmp(g_copy, g_blob, g_len) != 0) exit(1); /* LT_COMPARE=1 */
        CK(cuCtxGetCurrent_(&cur));
        CK(cuCtxGetId_(g_ctx, &id));
        CK(cuLaunchKernel_(g_dfunc, 1, 1, 1, 1, 1, 1, 0, ds, NULL, NULL));
      }
      CK(cuCtxSetCurrent_(g_ctx));
      CK(cuStreamSynchronize_(ds));
      CK(cuCtxSetCurrent_(NULL));
    } else {
      for (long i = 0; i < g_launches; ++i) {
        if (load) {
          void *m = mgpuModuleLoad(g_blob, g_len);
          mgpuLaunchKernel(mgpuModuleGetFunction(m, "empty"), 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL,
                           0);
          mgpuModuleUnload(m);
        } else {
          mgpuLaunchKernel(g_mfunc, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL, 0);
        }
      }
      mgpuStreamSynchronize(s);
    }
    pthread_barrier_wait(&g_start); /* main notes the block's end */
  }
  mgpuStreamDestroy(s);
  CK(cuCtxSetCurrent_(g_ctx));
  CK(cuStreamDestroy_(ds));
  return NULL;
}

static void paired_run(int t) {
  pthread_t th[64];
  pthread_barrier_init(&g_start, NULL, (unsigned)t + 1);
  for (int i = 0; i < t; ++i) pthread_create(&th[i], NULL, paired_worker, NULL);
  for (int b = 0; b < g_blocks; ++b) {
    pthread_barrier_wait(&g_start);
    g_block_t0 = now();
    pthread_barrier_wait(&g_start);
    pthread_barrier_wait(&g_start);
    g_block_dt[b] = now() - g_block_t0;
  }
  for (int i = 0; i < t; ++i) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&g_start);
  double ratios[128], bound[128], mode[128];
  int np = 0, nb = 0, nm = 0;
  for (int b = 0; b < g_blocks; ++b) {
    double per_s = (double)t * (double)g_launches / g_block_dt[b];
    if (block_kind(b) == 0) bound[nb++] = per_s;
    else mode[nm++] = per_s;
  }
  for (int k = 0; k < nb && k < nm; ++k) ratios[np++] = mode[k] / bound[k];
  qsort(ratios, (size_t)np, sizeof *ratios, cmp_double);
  qsort(bound, (size_t)nb, sizeof *bound, cmp_double);
  qsort(mode, (size_t)nm, sizeof *mode, cmp_double);
  printf("%s %d %.0f %.0f %.4f\n", g_mode, t, bound[nb / 2], mode[nm / 2],
         np % 2 ? ratios[np / 2] : 0.5 * (ratios[np / 2 - 1] + ratios[np / 2]));
  fflush(stdout);
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s driver[-scoped|-graph|-nocontext[-checks]|-graph-nocontext]|"
            "mgpu[-load][-current] BLOB LAUNCHES "
            "THREADS...\n", argv[0]);
    return 2;
  }
  g_mode = argv[1];
  FILE *fp = fopen(argv[2], "rb");
  if (!fp) return 2;
  fseek(fp, 0, SEEK_END);
  g_len = (size_t)ftell(fp);
  fseek(fp, 0, SEEK_SET);
  g_blob = aligned_alloc(64, (g_len + 64) & ~(size_t)63);
  if (fread(g_blob, 1, g_len, fp) != g_len) return 2;
  fclose(fp);
  g_launches = atol(argv[3]);
  if (getenv("LT_SPIN_NS")) g_spin_ns = atol(getenv("LT_SPIN_NS"));
  spin_calibrate();
  if (getenv("LT_COMPARE") && atoi(getenv("LT_COMPARE")) && !strstr(g_mode, "-exe")) {
    g_copy = malloc(g_len);
    if (!g_copy) return 2;
    memcpy(g_copy, g_blob, g_len);
  }
  if (strstr(g_mode, "-exe")) { /* the linked copy in .rodata instead of the heap's */
    if (!chain_blob_start || !chain_blob_end) return 2;
    g_blob = (void *)chain_blob_start;
    g_len = (size_t)(chain_blob_end - chain_blob_start);
  }
  /* the driver: the reference loop's, and the primary context the -current modes make current
   * (the one the library retains too) */
  void *h = dlopen("libcuda.so.1", RTLD_NOW);
  if (!h) return 3;
#define SYM(v, n) v = (fn_t)dlsym(h, n)
  SYM(cuInit_, "cuInit");
  SYM(cuDeviceGet_, "cuDeviceGet");
  SYM(cuDevicePrimaryCtxRetain_, "cuDevicePrimaryCtxRetain");
  SYM(cuCtxSetCurrent_, "cuCtxSetCurrent");
  SYM(cuCtxPushCurrent_, "cuCtxPushCurrent_v2");
  SYM(cuCtxPopCurrent_, "cuCtxPopCurrent_v2");
  SYM(cuModuleLoadData_, "cuModuleLoadData");
  SYM(cuModuleGetFunction_, "cuModuleGetFunction");
  SYM(cuStreamCreate_, "cuStreamCreate");
  SYM(cuStreamSynchronize_, "cuStreamSynchronize");
  SYM(cuStreamDestroy_, "cuStreamDestroy_v2");
  SYM(cuGraphCreate_, "cuGraphCreate");
  SYM(cuGraphAddKernelNode_, "cuGraphAddKernelNode_v2");
  SYM(cuGraphInstantiate_, "cuGraphInstantiateWithFlags");
  SYM(cuGraphLaunch_, "cuGraphLaunch");
  SYM(cuCtxGetCurrent_, "cuCtxGetCurrent");
  SYM(cuCtxGetId_, "cuCtxGetId");
  cuLaunchKernel_ = (int (*)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, void *, void **, void **))dlsym(h, "cuLaunchKernel");
  int dev = 0;
  CK(cuInit_(0));
  CK(cuDeviceGet_(&dev, 0));
  CK(cuDevicePrimaryCtxRetain_(&g_ctx, dev));
  int paired = !strncmp(g_mode, "paired-", 7);
  if (!strncmp(g_mode, "driver", 6) || paired) {
    void *mod = NULL;
    CK(cuCtxSetCurrent_(g_ctx));
    CK(cuModuleLoadData_(&mod, g_blob));
    CK(cuModuleGetFunction_(&g_dfunc, mod, "empty"));
  }
  if (strncmp(g_mode, "driver", 6))
    g_mfunc = mgpuModuleGetFunction(mgpuModuleLoad(g_blob, g_len), "empty");
  if (paired) {
    if (getenv("LT_BLOCKS")) g_blocks = atoi(getenv("LT_BLOCKS"));
    if (g_blocks < 2 || g_blocks > 256) return 2;
    for (int a = 4; a < argc; ++a) {
      int t = atoi(argv[a]);
      if (t >= 1 && t <= 64) paired_run(t);
    }
    return 0;
  }
  for (int a = 4; a < argc; ++a) {
    int t = atoi(argv[a]);
    pthread_t th[64];
    if (t < 1 || t > 64) continue;
    pthread_barrier_init(&g_start, NULL, (unsigned)t + 1);
    for (int i = 0; i < t; ++i) pthread_create(&th[i], NULL, worker, NULL);
    pthread_barrier_wait(&g_start);
    double t0 = now();
    for (int i = 0; i < t; ++i) pthread_join(th[i], NULL);
    double dt = now() - t0;
    pthread_barrier_destroy(&g_start);
    printf("%s %d %.0f\n", g_mode, t, (double)t * (double)g_launches / dt);
    fflush(stdout);
  }
  return 0;
}
