/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* chain_pair_probe.c - chain replay against the hand-made graph within ONE process (issue 21
 * item 2). chains.py and chain_split_probe.c run each variant as its own process, and a process
 * records chains at one of two host speeds (run N128), which moves a variant by more than the
 * margins item 2 asks about. Here every shape and the hand-made graph run in the same process, in
 * alternating blocks, and each shape's block is set against the graph blocks on either side of it.
 *
 *   chain_pair_probe FATBIN K CHAINS ROUNDS
 *
 * Shapes (each on a stream of its own): 22 (LLVM >= 21 code: K mgpuLaunchKernel +
 * mgpuStreamSynchronize), exe (each launch wrapped in mgpuModuleLoad / mgpuModuleGetFunction /
 * mgpuModuleUnload, the blob linked into this executable between chain_blob_start and
 * chain_blob_end), heap (the same with the blob read onto the heap: each cache hit compares it).
 * Two more shapes do the exe shape's calls and, before each load, compare the heap blob with a
 * copy the probe made (laid out as the library lays its copies out, mc_copy_alloc_like): exe+memcmp
 * with memcmp, exe+same with the library's comparison (csrc/support/same_bytes.c, compiled in).
 * They show what the heap shape's comparisons cost where the program itself makes them, in the
 * chain (the heap shape costs more than the exe shape plus the comparisons timed alone). One more,
 * graph+same, makes the same K comparisons before each launch of the hand-made graph: the
 * driver's own cost for the chain plus the verification a verified cache makes at every hit on a
 * heap blob.
 * The graph: one K-node graph made once by hand (cuGraphLaunch + cuStreamSynchronize). The thread
 * has no current context (as MLIR code's threads; the graph's calls name their stream's context).
 * A round: a graph block, then one block per shape (their order rotated per round), then the next
 * round's graph block; a block is CHAINS chains, timed each, its median taken. Before the rounds,
 * one round untimed. Prints one JSON line: {"k", "rounds", "graph_us": median of the graph blocks,
 * "us": {shape: median of its blocks}, "ratio": {shape: median over rounds of the shape's block /
 * the mean of the graph blocks before and after it}, "compare_us": K comparisons of the blob with
 * a copy (memcmp), the verification the heap shape's cache hits make, timed as a chain is,
 * "calls_ns": {"exe"|"heap": {"load", "get", "launch", "unload", "first_load", "first_get",
 * "first_launch", "first_unload", "sync"}}: split_calls below, "sync_ns": {"22", "22x",
 * "exe_held"}: sync_only below, "stream_sync_ns": the LLVM 22 shape's synchronisation on each of
 * the STREAMS streams}. Each shape's blocks take the streams in turn (g_round).
 * Same stream (run N153 on): with CHAIN_PAIR_SHIM naming benchmarks/harness/graph_stream_shim.c
 * built as a library and MGPU_CACHED_CUDA_DRIVER pointing at it, each shape's block is followed
 * by a graph block on the driver stream the shape's chains were replayed on (the shim's last
 * cuGraphLaunch; graph+same: the graph's own stream), and the line adds "ratio_same": {shape:
 * median over rounds of the shape's block / that graph block}, "graph_same_us": {shape: median
 * of those graph blocks} and "stream_graph_us": the graph alone on each of 8 streams the probe
 * makes after the warm-up (the driver's own spread from one stream to another).
 * Run it with MGPU_CACHED_CHAIN=1 MGPU_CACHED_STREAM_HANDLES=tagged for chain replay.
 * Build: cc -O2 -I$CUDA/include -Icsrc chain_pair_probe.c blob.S $(python3 -m mgpu_cached --ldflags) -lcuda
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../csrc/include/mgpu_abi.h"
#include "harness/driver_setup.h"
#include "harness/programs.h" /* now_us, read_file, sample_median, blob_compare_us */
#include "../csrc/support/same_bytes.c" /* mc_same_bytes, mc_copy_alloc_like (needs -Icsrc) */

extern const char chain_blob_start[] __attribute__((weak));
extern const char chain_blob_end[] __attribute__((weak));

enum { SHAPES = 6, STREAMS = 5 }; /* graph+same runs on the hand-made graph's stream */
static const char *const k_shape[SHAPES] = {"22", "exe", "heap", "exe+memcmp", "exe+same",
                                            "graph+same"};

static long g_k, g_chains;
static double *g_t; /* one block's chain times */
static CUgraphExec g_exec;
static CUstream g_cs;
static void *g_fn, *g_stream[STREAMS], *g_blob[SHAPES];
static long g_round; /* a shape's block runs on stream (shape + round) % STREAMS: run N146 found the
                        synchronisation 0.5-0.8 µs apart from one of the library's streams to
                        another, whatever ran on them, so each shape takes each stream in turn */
static size_t g_size[SHAPES];
static const unsigned char *g_heap, *g_copy; /* the heap blob and the probe's copy of it */
static size_t g_heap_size;

/* Where a link's time goes (after the rounds): for the exe and heap shapes, CHAINS chains more with
 * each of the link's four calls and the synchronisation timed apart (the time-stamp counter,
 * fenced); per call the median over every link but each chain's first, the first link's calls
 * apart, in ns (the counter's rate taken against now_us over the same chains).
 * calls_ns[shape - 1][call]: load, get, launch, unload, the same four of the first link, sync. */
enum { CALLS = 9 };
static const char *const k_call[CALLS] = {"load", "get", "launch", "unload", "first_load",
                                          "first_get", "first_launch", "first_unload", "sync"};
static double calls_ns[2][CALLS];

static inline uint64_t stamp(void) {
  unsigned lo, hi;
  __asm__ volatile("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi) : : "memory");
  return ((uint64_t)hi << 32) | lo;
}

/* The synchronisation's median in ns over CHAINS chains of K launches of fn on stream st (no
 * module calls); after split_calls: sync_ns "22" (the LLVM 22 shape's kernel, the heap blob's),
 * "22x" (the exe blob's kernel, its module held by a load not unloaded), "exe_held" (the exe
 * shape once that load holds its module, as the setup's load holds the heap blob's). They tell a
 * kernel's or a held module's share of the synchronisation from the heap path's. */
static double sync_ns[3], stream_sync_ns[STREAMS]; /* and the LLVM 22 shape's on each stream */
static const char *const k_sync[3] = {"22", "22x", "exe_held"};

static double sync_only(void *fn, void *st, double *v) {
  double t0 = now_us();
  uint64_t c0 = stamp();
  for (long c = 0; c < g_chains; ++c) {
    for (long i = 0; i < g_k; ++i) mgpuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, st, NULL, NULL, 0);
    uint64_t y = stamp();
    mgpuStreamSynchronize(st);
    v[c] = (double)(stamp() - y);
  }
  double ticks_per_ns = (double)(stamp() - c0) / ((now_us() - t0) * 1000.0);
  return sample_median(v, g_chains) / ticks_per_ns;
}

/* One shape's CHAINS chains with every call of a link and the synchronisation timed (`shape`: 1
 * exe, 2 heap), into out[CALLS] (ns); v: room for CHAINS x K x CALLS values. */
static void time_calls(int shape, double *v, double *out) {
  size_t per = (size_t)g_chains * (size_t)g_k;
  void *st = g_stream[shape];
  size_t n = 0, c1 = 0;
  double t0 = now_us();
  uint64_t c0 = stamp();
  for (long c = 0; c < g_chains; ++c) {
    for (long i = 0; i < g_k; ++i) {
      uint64_t a = stamp();
      void *m = mgpuModuleLoad(g_blob[shape], g_size[shape]);
      uint64_t b = stamp();
      void *f = mgpuModuleGetFunction(m, "empty");
      uint64_t d = stamp();
      mgpuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, st, NULL, NULL, 0);
      uint64_t e = stamp();
      mgpuModuleUnload(m);
      uint64_t g = stamp();
      size_t at = i == 0 ? 4 * per + c1++ : n++; /* the first link's calls: 4..7 */
      v[at] = (double)(b - a);
      v[at + per] = (double)(d - b);
      v[at + 2 * per] = (double)(e - d);
      v[at + 3 * per] = (double)(g - e);
    }
    uint64_t y = stamp();
    mgpuStreamSynchronize(st);
    v[8 * per + (size_t)c] = (double)(stamp() - y);
  }
  double ticks_per_ns = (double)(stamp() - c0) / ((now_us() - t0) * 1000.0);
  for (int k = 0; k < CALLS; ++k) {
    long count = k < 4 ? (long)n : k < 8 ? (long)c1 : g_chains;
    out[k] = count ? sample_median(v + (size_t)k * per, count) / ticks_per_ns : 0;
  }
}

static int split_calls(void) {
#if defined(__x86_64__)
  double *v = malloc(sizeof(double) * (size_t)g_chains * (size_t)g_k * CALLS);
  if (!v) return -1;
  for (int s = 0; s < STREAMS; ++s) stream_sync_ns[s] = sync_only(g_fn, g_stream[s], v);
  sync_ns[0] = stream_sync_ns[0];
  time_calls(1, v, calls_ns[0]);
  time_calls(2, v, calls_ns[1]);
  /* the exe shape again, its module held by a load not unloaded (sync_ns above) */
  void *held = mgpuModuleLoad(g_blob[1], g_size[1]);
  void *fx = held ? mgpuModuleGetFunction(held, "empty") : NULL;
  if (!fx) return -1;
  sync_ns[1] = sync_only(fx, g_stream[0], v);
  double again[CALLS];
  time_calls(1, v, again);
  sync_ns[2] = again[8];
  mgpuModuleUnload(held);
  free(v);
#endif
  return 0;
}

/* The median time of CHAINS launches + synchronisations of the hand-made graph on `st`, each
 * after the heap shape's K comparisons when `compare` (graph+same). */
static double graph_block_on(CUstream st, int compare) {
  for (long c = 0; c < g_chains; ++c) {
    double t0 = now_us();
    for (long i = 0; compare && i < g_k; ++i)
      if (!mc_same_bytes(g_copy, g_heap, g_heap_size)) exit(3);
    CK(cuGraphLaunch(g_exec, st));
    CK(cuStreamSynchronize(st));
    g_t[c] = now_us() - t0;
  }
  return sample_median(g_t, g_chains);
}

/* The median chain time of one block of the graph (shape < 0) or of a shape. */
static double block(int shape) {
  if (shape < 0 || shape == 5) return graph_block_on(g_cs, shape == 5);
  for (long c = 0; c < g_chains; ++c) {
    double t0 = now_us();
    void *s = g_stream[(shape + g_round) % STREAMS];
    for (long i = 0; i < g_k; ++i) {
      if (shape == 0) {
        mgpuLaunchKernel(g_fn, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL, 0);
      } else {
        if (shape >= 3 && !(shape == 3 ? memcmp(g_copy, g_heap, g_heap_size) == 0
                                       : mc_same_bytes(g_copy, g_heap, g_heap_size)))
          exit(3); /* never: nothing writes the blob */
        void *m = mgpuModuleLoad(g_blob[shape], g_size[shape]);
        mgpuLaunchKernel(mgpuModuleGetFunction(m, "empty"), 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL, 0);
        mgpuModuleUnload(m);
      }
    }
    mgpuStreamSynchronize(s);
    g_t[c] = now_us() - t0;
  }
  return sample_median(g_t, g_chains);
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s FATBIN K CHAINS ROUNDS\n", argv[0]);
    return 2;
  }
  g_k = atol(argv[2]);
  g_chains = atol(argv[3]);
  long rounds = atol(argv[4]);
  if (g_k < 1 || g_chains < 1 || rounds < 1 || rounds > 1000 || !chain_blob_start ||
      !chain_blob_end)
    return 2;
  size_t size = 0;
  void *heap = read_file(argv[1], &size);
  g_blob[0] = g_blob[2] = heap;
  g_size[0] = g_size[2] = size;
  g_blob[1] = g_blob[3] = g_blob[4] = (void *)chain_blob_start;
  g_size[1] = g_size[3] = g_size[4] = (size_t)(chain_blob_end - chain_blob_start);
  g_heap = heap;
  g_heap_size = size;
  unsigned char *copy = heap ? mc_copy_alloc_like(heap, size) : NULL;
  if (!copy) return 2;
  memcpy(copy, heap, size);
  g_copy = copy;
  g_t = malloc(sizeof(double) * (size_t)g_chains);
  if (!heap || !g_t) return 2;
  /* the hand-made graph, then no context current */
  CUcontext ctx = NULL;
  CUmodule cm = driver_setup(heap, &ctx);
  CUfunction cfn;
  CK(cuModuleGetFunction(&cfn, cm, "empty"));
  CK(cuStreamCreate(&g_cs, CU_STREAM_NON_BLOCKING));
  g_exec = driver_chain_exec(cfn, g_k);
  CK(cuCtxSetCurrent(NULL));
  void *m = mgpuModuleLoad(heap, size);
  g_fn = m ? mgpuModuleGetFunction(m, "empty") : NULL;
  for (int s = 0; s < STREAMS; ++s) g_stream[s] = mgpuStreamCreate();
  int streams = 1;
  for (int s = 0; s < STREAMS; ++s) streams &= g_stream[s] != NULL;
  if (!g_fn || !streams)
    return fprintf(stderr, "chain_pair_probe: mgpu setup failed\n"), 2;
  /* same stream: the shim the library loads as its driver (the module load above loaded it) */
  void *(*shim_last)(void) = NULL;
  const char *shim = getenv("CHAIN_PAIR_SHIM");
  if (shim && *shim) {
    void *h = dlopen(shim, RTLD_NOW | RTLD_NOLOAD);
    shim_last = h ? (void *(*)(void))dlsym(h, "graph_stream_shim_last") : NULL;
    if (!shim_last) return fprintf(stderr, "chain_pair_probe: %s is not loaded\n", shim), 2;
  }
  double *graph = malloc(sizeof(double) * (size_t)(rounds + 1));
  double *us[SHAPES], *ratio[SHAPES], *same[SHAPES], *gsame[SHAPES];
  long nsame[SHAPES] = {0};
  for (int s = 0; s < SHAPES; ++s) {
    us[s] = malloc(sizeof(double) * (size_t)rounds);
    ratio[s] = malloc(sizeof(double) * (size_t)rounds);
    same[s] = malloc(sizeof(double) * (size_t)rounds);
    gsame[s] = malloc(sizeof(double) * (size_t)rounds);
    if (!us[s] || !ratio[s] || !same[s] || !gsame[s]) return 2;
  }
  if (!graph) return 2;
  for (int s = -1; s < SHAPES; ++s) (void)block(s); /* warm-up round */
  enum { PROBE_STREAMS = 8 };
  CUstream ps[PROBE_STREAMS];
  if (shim_last) { /* made now: the library's streams were bound in the warm-up round */
    CK(cuCtxSetCurrent(ctx));
    for (int i = 0; i < PROBE_STREAMS; ++i) CK(cuStreamCreate(&ps[i], CU_STREAM_NON_BLOCKING));
    CK(cuCtxSetCurrent(NULL));
  }
  graph[0] = block(-1);
  for (long r = 0; r < rounds; ++r) {
    g_round = r;
    for (int j = 0; j < SHAPES; ++j) {
      int s = (int)((j + r) % SHAPES);
      us[s][r] = block(s);
      if (!shim_last) continue;
      void *d = s == 5 ? (void *)g_cs : shim_last(); /* the stream the block's chains ran on */
      if (!d) continue;
      double g = graph_block_on((CUstream)d, 0);
      gsame[s][nsame[s]] = g;
      same[s][nsame[s]++] = us[s][r] / g;
    }
    graph[r + 1] = block(-1);
    for (int s = 0; s < SHAPES; ++s) ratio[s][r] = us[s][r] / (0.5 * (graph[r] + graph[r + 1]));
  }
  /* K comparisons of the blob with a copy, timed as a chain is (after the rounds) */
  double compare = blob_compare_us(heap, size, g_k, g_chains, 0, g_t);
  if (compare < 0 || split_calls() != 0) return 2;
  printf("{\"k\": %ld, \"rounds\": %ld, \"graph_us\": %.3f, \"us\": {", g_k, rounds,
         sample_median(graph, rounds + 1));
  for (int s = 0; s < SHAPES; ++s)
    printf("%s\"%s\": %.3f", s ? ", " : "", k_shape[s], sample_median(us[s], rounds));
  printf("}, \"ratio\": {");
  for (int s = 0; s < SHAPES; ++s)
    printf("%s\"%s\": %.4f", s ? ", " : "", k_shape[s], sample_median(ratio[s], rounds));
  printf("}, \"compare_us\": %.3f, \"calls_ns\": {", compare);
  for (int s = 0; s < 2; ++s) {
    printf("%s\"%s\": {", s ? ", " : "", k_shape[s + 1]);
    for (int k = 0; k < CALLS; ++k)
      printf("%s\"%s\": %.1f", k ? ", " : "", k_call[k], calls_ns[s][k]);
    printf("}");
  }
  printf("}, \"sync_ns\": {");
  for (int s = 0; s < 3; ++s) printf("%s\"%s\": %.1f", s ? ", " : "", k_sync[s], sync_ns[s]);
  printf("}, \"stream_sync_ns\": [");
  for (int s = 0; s < STREAMS; ++s) printf("%s%.1f", s ? ", " : "", stream_sync_ns[s]);
  printf("]");
  if (shim_last) {
    printf(", \"ratio_same\": {");
    for (int s = 0; s < SHAPES; ++s)
      printf("%s\"%s\": %.4f", s ? ", " : "", k_shape[s],
             nsame[s] ? sample_median(same[s], nsame[s]) : 0.0);
    printf("}, \"graph_same_us\": {");
    for (int s = 0; s < SHAPES; ++s)
      printf("%s\"%s\": %.3f", s ? ", " : "", k_shape[s],
             nsame[s] ? sample_median(gsame[s], nsame[s]) : 0.0);
    printf("}, \"stream_graph_us\": [");
    for (int i = 0; i < PROBE_STREAMS; ++i)
      printf("%s%.3f", i ? ", " : "", graph_block_on(ps[i], 0));
    printf("]");
  }
  printf("}\n");
  return 0;
}
