/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* chain.c - chains of launches on one stream, then one sync (issue 12): K launches of the empty
 * kernel, then a synchronisation, timed per chain, through the mgpu* runtime it is linked against
 * and straight through the driver.
 *
 *   chain FATBIN MODE K CHAINS REPS
 *
 * MODE: mgpu        K mgpuLaunchKernel on one mgpuStreamCreate stream + mgpuStreamSynchronize
 *                   (the library's switches decide the path: MGPU_CACHED_GRAPH, MGPU_CACHED_CHAIN);
 *                   the module loaded once (the shape of LLVM >= 21 code)
 *       mgpu19      the same, each launch as LLVM <= 20 code makes it: mgpuModuleLoad,
 *                   mgpuModuleGetFunction, mgpuLaunchKernel, mgpuModuleUnload (the blob is read
 *                   from FATBIN into the heap, so each cache hit compares its bytes, ~0.1 us for
 *                   the empty kernel's; MLIR's blob in .rodata is not compared)
 *       mgpu19ro    mgpu19 with the blob in a loaded object's read-only data: FATBIN is then a
 *                   shared object whose .rodata holds the blob between the symbols
 *                   chain_blob_start and chain_blob_end (chains.py makes it)
 *       mgpu19exe   mgpu19 with the blob where MLIR's AOT code has it in a program linked from
 *                   its object: this executable's own .rodata (chains.py links an object holding
 *                   chain_blob_start / chain_blob_end into it; FATBIN is not read)
 *       cu_stream   K cuLaunchKernel + cuStreamSynchronize (the floor of today's path)
 *       cu_graph1   K x (cuGraphExecKernelNodeSetParams + cuGraphLaunch) of a one-node exec + sync
 *       cu_graphK   one K-node graph (a chain of dependent nodes) made once by hand:
 *                   cuGraphLaunch + cuStreamSynchronize (the driver's own limit for a chain)
 * Kernel `empty` (no arguments) from FATBIN. Prints one JSON line: {"mode", "k", "us": [per
 * chain, median of each rep]}.
 * Build: cc -O2 -I$CUDA/include chain.c -lmgpu_cached -lcuda -lm
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver_setup.h"
#include "programs.h"

#include "../../csrc/include/mgpu_abi.h"

/* The blob linked into this executable (mgpu19exe), if chains.py linked it: weak, so that the
 * harness also builds without it. */
extern const char chain_blob_start[] __attribute__((weak));
extern const char chain_blob_end[] __attribute__((weak));

static const char *mode;
static long K;
static void *mfn, *mstream, *mblob;
static size_t mblob_size;
static CUfunction cfn;
static CUstream cs;
static CUgraphExec one, chain;
static CUgraphNode one_node;
static CUDA_KERNEL_NODE_PARAMS kp;

/* The mode is chosen once per call, outside the timed chains (as floor.c does). */
static void run(long n) {
  if (!strcmp(mode, "mgpu")) {
    for (long c = 0; c < n; ++c) {
      for (long i = 0; i < K; ++i) mgpuLaunchKernel(mfn, 1, 1, 1, 1, 1, 1, 0, mstream, NULL, NULL, 0);
      mgpuStreamSynchronize(mstream);
    }
  } else if (!strncmp(mode, "mgpu19", 6)) {
    for (long c = 0; c < n; ++c) {
      for (long i = 0; i < K; ++i) {
        void *m = mgpuModuleLoad(mblob, mblob_size);
        void *f = mgpuModuleGetFunction(m, "empty");
        mgpuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, mstream, NULL, NULL, 0);
        mgpuModuleUnload(m);
      }
      mgpuStreamSynchronize(mstream);
    }
  } else if (!strcmp(mode, "cu_stream")) {
    for (long c = 0; c < n; ++c) {
      for (long i = 0; i < K; ++i) CK(cuLaunchKernel(cfn, 1, 1, 1, 1, 1, 1, 0, cs, NULL, NULL));
      CK(cuStreamSynchronize(cs));
    }
  } else if (!strcmp(mode, "cu_graph1")) {
    for (long c = 0; c < n; ++c) {
      for (long i = 0; i < K; ++i) {
        CK(cuGraphExecKernelNodeSetParams(one, one_node, &kp));
        CK(cuGraphLaunch(one, cs));
      }
      CK(cuStreamSynchronize(cs));
    }
  } else {
    for (long c = 0; c < n; ++c) {
      CK(cuGraphLaunch(chain, cs));
      CK(cuStreamSynchronize(cs));
    }
  }
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: %s FATBIN mgpu|mgpu19|mgpu19ro|mgpu19exe|cu_stream|cu_graph1|cu_graphK K CHAINS "
            "REPS\n",
            argv[0]);
    return 2;
  }
  mode = argv[2];
  K = atol(argv[3]);
  long chains = atol(argv[4]);
  int reps = atoi(argv[5]);
  if (K < 1 || chains < 2 || reps < 1 || reps > 64) return 2;
  size_t size = 0;
  void *blob = NULL;
  if (!strcmp(mode, "mgpu19exe")) { /* the blob in this executable's .rodata */
    if (!chain_blob_start || !chain_blob_end)
      return fprintf(stderr, "chain: no blob linked into this executable\n"), 2;
    blob = (void *)chain_blob_start;
    size = (size_t)(chain_blob_end - chain_blob_start);
  } else if (!strcmp(mode, "mgpu19ro")) { /* the blob in a loaded object's .rodata */
    void *h = dlopen(argv[1], RTLD_NOW);
    const char *b = h ? dlsym(h, "chain_blob_start") : NULL, *e = h ? dlsym(h, "chain_blob_end") : NULL;
    if (!b || !e) return fprintf(stderr, "chain: %s: no chain_blob_start/end\n", argv[1]), 2;
    blob = (void *)b;
    size = (size_t)(e - b);
  } else {
    blob = read_file(argv[1], &size);
  }
  if (!strncmp(mode, "mgpu", 4)) {
    mblob = blob;
    mblob_size = size;
    void *m = mgpuModuleLoad(blob, size);
    mfn = mgpuModuleGetFunction(m, "empty");
    mstream = mgpuStreamCreate();
    if (!m || !mfn || !mstream) return fprintf(stderr, "chain: mgpu setup failed\n"), 2;
  } else {
    CUmodule cm = driver_setup(blob, NULL);
    CK(cuModuleGetFunction(&cfn, cm, "empty"));
    CK(cuStreamCreate(&cs, CU_STREAM_NON_BLOCKING));
    memset(&kp, 0, sizeof kp);
    kp.func = cfn;
    kp.gridDimX = kp.gridDimY = kp.gridDimZ = kp.blockDimX = kp.blockDimY = kp.blockDimZ = 1;
    CUgraph g1;
    CK(cuGraphCreate(&g1, 0));
    CK(cuGraphAddKernelNode(&one_node, g1, NULL, 0, &kp));
    CK(cuGraphInstantiate(&one, g1, 0));
    chain = driver_chain_exec(cfn, K);
  }
  double us[64];
  time_reps(run, 200 / K + 2, chains, reps, us);
  /* time_reps gives µs per iteration = per chain */
  printf("{\"mode\": \"%s\", \"k\": %ld, \"chains\": %ld, \"us\": [", mode, K, chains);
  for (int r = 0; r < reps; ++r) printf("%s%.3f", r ? ", " : "", us[r]);
  printf("]}\n");
  return 0;
}
