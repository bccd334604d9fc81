/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* chain_split_probe.c - where a chain's time goes (issue 21 item 2). benchmarks/harness/chain.c
 * times whole chains; this times each chain's two parts apart: the K launches (the host's work:
 * with chain replay on, every launch is deferred, so the GPU idles meanwhile) and the
 * synchronisation (the submission of the deferred segment, the GPU's work, the wait). Runs N100
 * and N106 measured the LLVM <= 20 shape (load / look-up / launch / unload per link) 1-2 µs per
 * chain slower than LLVM 22's at K = 10, more than its per-link cost times 10; this says in which
 * part.
 *
 *   chain_split_probe FATBIN MODE K CHAINS
 *
 * MODE: mgpu (LLVM >= 21 code: K mgpuLaunchKernel + mgpuStreamSynchronize), mgpu19 (each launch
 * wrapped in mgpuModuleLoad / mgpuModuleGetFunction / mgpuModuleUnload, the blob on the heap),
 * mgpu19exe (the same, the blob linked into this executable between chain_blob_start and
 * chain_blob_end), mgpuid (mgpu plus two cuCtxGetId per chain: the context checks the LLVM <= 20
 * shape's loads make per chain under chain replay), cu_graphK (one K-node graph made once by hand:
 * the launches part is empty). Kernel `empty` (no arguments). After 200 warm-up chains, prints
 * one JSON line: {"mode", "k", "launch_us", "sync_us", "total_us"}, each the median over CHAINS
 * chains, "launch_mean_us", "sync_mean_us", and "calib_ns" / "calib_thr_ns": the host's speed
 * before and after the chains (calib_ns below); "first_us", the median time to the end of a
 * chain's first launch (link); "cpu_changes", how many timed chains began on another CPU than the
 * chain before; "csw", the voluntary and involuntary context switches over the timed chains;
 * "compare_us", the time of K comparisons of the blob's bytes with a copy (memcmp), the
 * verification the heap shape's cache hits make (the same comparison, timed as the chains are).
 * Build: cc -O2 -I$CUDA/include chain_split_probe.c [blob.S] $(python3 -m mgpu_cached --ldflags) -lcuda
 */
#include <cuda.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "../csrc/include/mgpu_abi.h"
#include "harness/driver_setup.h"
#include "harness/programs.h" /* now_us, sample_median, blob_compare_us */

extern const char chain_blob_start[] __attribute__((weak));
extern const char chain_blob_end[] __attribute__((weak));

/* The host's speed at this moment, to set the chains' host part against (runs N113-N114 found
 * that part on one of two levels, changing with time, on every core): ns per step of one
 * dependent integer chain (an LCG: latency-bound, follows the clock) and of eight independent
 * ones interleaved (throughput-bound: also slows when another thread shares the core), 2^20 steps,
 * the least of three. */
static void calib_ns(double *lat, double *thr) {
  *lat = *thr = 1e30;
  for (int t = 0; t < 3; ++t) {
    volatile uint64_t seed = 12345;
    uint64_t x[8];
    for (int j = 0; j < 8; ++j) x[j] = seed + (uint64_t)j;
    double t0 = now_us();
    for (long i = 0; i < (1L << 20); ++i) x[0] = x[0] * 6364136223846793005ull + 1442695040888963407ull;
    double t1 = now_us();
    for (long i = 0; i < (1L << 20) / 8; ++i)
      for (int j = 0; j < 8; ++j) x[j] = x[j] * 6364136223846793005ull + 1442695040888963407ull;
    double t2 = now_us();
    for (int j = 0; j < 8; ++j) seed ^= x[j];
    double l = (t1 - t0) * 1e3 / (double)(1L << 20), h = (t2 - t1) * 1e3 / (double)(1L << 20);
    if (l < *lat) *lat = l;
    if (h < *thr) *thr = h;
  }
}

static double mean(const double *v, long n) {
  double s = 0;
  for (long i = 0; i < n; ++i) s += v[i];
  return s / (double)n;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s FATBIN mgpu|mgpu19|mgpu19exe|mgpuid|cu_graphK K CHAINS\n", argv[0]);
    return 2;
  }
  const char *mode = argv[2];
  long K = atol(argv[3]), chains = atol(argv[4]);
  if (K < 1 || chains < 2) return 2;
  int m19 = !strncmp(mode, "mgpu19", 6), mid = !strcmp(mode, "mgpuid"),
      graph = !strcmp(mode, "cu_graphK");
  if (!m19 && !mid && !graph && strcmp(mode, "mgpu")) return 2;
  size_t size = 0;
  void *blob = NULL;
  if (!strcmp(mode, "mgpu19exe")) {
    if (!chain_blob_start || !chain_blob_end)
      return fprintf(stderr, "chain_split_probe: no blob linked in\n"), 2;
    blob = (void *)chain_blob_start;
    size = (size_t)(chain_blob_end - chain_blob_start);
  } else {
    blob = read_file(argv[1], &size);
  }
  void *mfn = NULL, *mstream = NULL;
  CUstream cs = NULL;
  CUgraphExec exec = NULL;
  CUcontext ctx = NULL;
  if (!graph) {
    void *m = mgpuModuleLoad(blob, size);
    mfn = m ? mgpuModuleGetFunction(m, "empty") : NULL;
    mstream = mgpuStreamCreate();
    if (!mfn || !mstream) return fprintf(stderr, "chain_split_probe: mgpu setup failed\n"), 2;
    if (mid) { /* device 0's primary context: the one the library checks */
      CUdevice dev;
      CK(cuInit(0));
      CK(cuDeviceGet(&dev, 0));
      CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    }
  } else {
    CUmodule cm = driver_setup(blob, NULL);
    CUfunction cfn;
    CK(cuModuleGetFunction(&cfn, cm, "empty"));
    CK(cuStreamCreate(&cs, CU_STREAM_NON_BLOCKING));
    exec = driver_chain_exec(cfn, K);
  }
  double *launch = malloc(sizeof(double) * (size_t)chains);
  double *sync = malloc(sizeof(double) * (size_t)chains);
  double *total = malloc(sizeof(double) * (size_t)chains);
  double *first = malloc(sizeof(double) * (size_t)chains);
  if (!launch || !sync || !total || !first) return 2;
  long cpu_changes = 0;
  int cpu = sched_getcpu();
  struct rusage ru0, ru1;
  unsigned long long id = 0;
  double lat0, thr0, lat1, thr1;
  calib_ns(&lat0, &thr0);
  getrusage(RUSAGE_SELF, &ru0);
  for (long c = -200; c < chains; ++c) {
    int now_cpu = sched_getcpu();
    if (c >= 0 && now_cpu != cpu) ++cpu_changes;
    cpu = now_cpu;
    double t0 = now_us(), tf = t0;
    if (graph) {
      CK(cuGraphLaunch(exec, cs));
    } else {
      if (mid) CK(cuCtxGetId(ctx, &id));
      for (long i = 0; i < K; ++i) {
        if (m19) {
          void *m = mgpuModuleLoad(blob, size);
          void *f = mgpuModuleGetFunction(m, "empty");
          mgpuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, mstream, NULL, NULL, 0);
          mgpuModuleUnload(m);
        } else {
          mgpuLaunchKernel(mfn, 1, 1, 1, 1, 1, 1, 0, mstream, NULL, NULL, 0);
        }
        if (i == 0) tf = now_us();
      }
      if (mid) CK(cuCtxGetId(ctx, &id));
    }
    double t1 = now_us();
    if (graph) CK(cuStreamSynchronize(cs));
    else mgpuStreamSynchronize(mstream);
    double t2 = now_us();
    if (c < 0) continue;
    launch[c] = t1 - t0;
    first[c] = (graph ? t1 : tf) - t0;
    sync[c] = t2 - t1;
    total[c] = t2 - t0;
  }
  getrusage(RUSAGE_SELF, &ru1);
  double first_us = sample_median(first, chains);
  /* What the heap shape's cache hits compare (the library keeps a copy), after the chains. */
  double compare = blob_compare_us(blob, size, K, chains, 200, first);
  if (compare < 0) return 2;
  calib_ns(&lat1, &thr1);
  double lm = mean(launch, chains), sm = mean(sync, chains);
  printf("{\"mode\": \"%s\", \"k\": %ld, \"launch_us\": %.3f, \"sync_us\": %.3f, \"total_us\": %.3f, "
         "\"launch_mean_us\": %.3f, \"sync_mean_us\": %.3f, \"calib_ns\": [%.4f, %.4f], \"calib_thr_ns\": [%.4f, %.4f], "
         "\"first_us\": %.3f, \"cpu_changes\": %ld, \"csw\": [%ld, %ld], \"compare_us\": %.3f}\n",
         mode, K, sample_median(launch, chains), sample_median(sync, chains),
         sample_median(total, chains), lm, sm,
         lat0, lat1, thr0, thr1, first_us, cpu_changes, ru1.ru_nvcsw - ru0.ru_nvcsw,
         ru1.ru_nivcsw - ru0.ru_nivcsw, compare);
  return 0;
}
