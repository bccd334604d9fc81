/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* fake_neighbour.h - included by fakecuda.c: what the allocator's good-neighbour behaviour (issue 19)
 * needs from the fake driver: cuMemGetInfo, driver memory pools, and test controls over
 * fake_capture.h's model of stream capture.
 *
 * cuMemGetInfo: total = the memory limit (fake_set_memory_limit), or 80 GiB without one; free =
 * total - the bytes the fake has handed out (pool memory included, until trimmed).
 *
 * Memory pools (only with FAKECUDA_MEMPOOL=1; otherwise cuMemPoolCreate fails with
 * CUDA_ERROR_NOT_SUPPORTED, as on a driver without them): cuMemAllocFromPoolAsync takes memory
 * from the pool's reserve (blocks freed with cuMemFreeAsync) or from the device (mem_take);
 * cuMemFreeAsync puts the block in the pool's reserve (still counted as used, never waits);
 * cuMemPoolTrimTo(pool, 0) gives the reserve back to the device. fake_pool_reserved() says how many
 * bytes pools hold in reserve; fake_set_pool_chunk(n) makes a pool allocation fail with out of
 * memory unless n bytes are free (the real pool reserves physical memory in chunks; the variable
 * FAKECUDA_POOL_CHUNK sets it too). Neither waits for any work (the real ones are stream ordered).
 *
 * Capture: fake_capture_begin(stream) starts "another library's" global-mode capture of `stream`
 * (a stream the test made, owned by no thread of the process) in fake_capture.h's model, which
 * refuses and counts the unsafe calls; fake_capture_end() ends it (0, or 901
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED); fake_capture_refusals() counts the refused calls. */
#ifndef MGPU_CACHED_TEST_FAKE_NEIGHBOUR_H
#define MGPU_CACHED_TEST_FAKE_NEIGHBOUR_H

/* ---- cuMemGetInfo ---- */
static size_t fake_total_memory(void) { /* lock held */
  return g_mem_limit ? g_mem_limit : ((size_t)80 << 30);
}
EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  BEGIN(cuMemGetInfo);
  if (!current()) RETURN(INVALID_CONTEXT);
  size_t t = fake_total_memory();
  *total = t;
  *free_bytes = g_mem_used < t ? t - g_mem_used : 0;
  RETURN(0);
}

/* ---- memory pools ---- */
struct CUmemPoolHandle_st {
  int magic;           /* 0x9001 */
  int device;
  CUdeviceptr *res;    /* reserve: blocks freed with cuMemFreeAsync (owned array) */
  size_t *resn, nres, capres;
};
static size_t g_pool_reserved; /* under g_lock */
static int mempool_on(void) {
  const char *v = getenv("FAKECUDA_MEMPOOL");
  return v && *v == '1';
}
EXPORT size_t fake_pool_reserved(void) {
  pthread_mutex_lock(&g_lock);
  size_t n = g_pool_reserved;
  pthread_mutex_unlock(&g_lock);
  return n;
}
static size_t mem_size_of(CUdeviceptr p) { /* lock held */
  for (size_t i = 0; i < g_nmem; ++i)
    if (g_mem[i].p == (void *)(uintptr_t)p) return g_mem[i].n;
  return 0;
}
EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props) {
  BEGIN(cuMemPoolCreate);
  if (!mempool_on()) RETURN(801);
  if (!pool || !props || props->location.id < 0 || props->location.id >= ndevices())
    RETURN(INVALID_VALUE);
  struct CUmemPoolHandle_st *p = calloc(1, sizeof *p);
  p->magic = 0x9001;
  p->device = props->location.id;
  remember(p);
  *pool = p;
  RETURN(0);
}
static int valid_pool(CUmemoryPool p) { return known(p) && p->magic == 0x9001; }
static size_t g_pool_chunk; /* fake_set_pool_chunk: physical memory a pool allocation needs */
EXPORT void fake_set_pool_chunk(size_t bytes) {
  pthread_mutex_lock(&g_lock);
  g_pool_chunk = bytes;
  pthread_mutex_unlock(&g_lock);
}
EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t n, CUmemoryPool pool,
                                        CUstream s) {
  BEGIN(cuMemAllocFromPoolAsync);
  if (!valid_pool(pool) || (s && !valid_stream(s))) RETURN(INVALID_VALUE);
  static int env_read;
  if (!env_read) { /* FAKECUDA_POOL_CHUNK: the same, for programs that cannot call the control */
    const char *c = getenv("FAKECUDA_POOL_CHUNK");
    if (c && !g_pool_chunk) g_pool_chunk = (size_t)strtoull(c, NULL, 10);
    env_read = 1;
  }
  if (g_pool_chunk && g_mem_limit && g_mem_used + g_pool_chunk > g_mem_limit)
    RETURN(2); /* the real pool reserves in chunks (H100: 4 KiB failed with 16 MiB free) */
  for (size_t i = 0; i < pool->nres; ++i)
    if (pool->resn[i] == n) { /* a reserved block of that size */
      *dptr = pool->res[i];
      pool->res[i] = pool->res[--pool->nres];
      pool->resn[i] = pool->resn[pool->nres];
      g_pool_reserved -= n;
      RETURN(0);
    }
  int r = mem_take(dptr, n);
  if (r == 2 && pool->nres) { /* the real pool trims its own reserve before failing */
    for (size_t i = 0; i < pool->nres; ++i) mem_give(pool->res[i]);
    pool->nres = 0;
    g_pool_reserved = 0;
    r = mem_take(dptr, n);
  }
  RETURN(r);
}
EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) {
  BEGIN(cuMemFreeAsync);
  if (s && !valid_stream(s)) RETURN(INVALID_VALUE);
  size_t n = mem_size_of(p);
  if (!n) RETURN(INVALID_VALUE);
  struct CUmemPoolHandle_st *pool = NULL; /* the first pool: tests use one device's pool */
  for (int i = 0; i < g_nobjs && !pool; ++i)
    if (((struct CUmemPoolHandle_st *)g_objs[i])->magic == 0x9001) pool = g_objs[i];
  if (!pool) RETURN(INVALID_VALUE);
  if (pool->nres == pool->capres) {
    pool->capres = pool->capres ? 2 * pool->capres : 16;
    pool->res = realloc(pool->res, pool->capres * sizeof *pool->res);
    pool->resn = realloc(pool->resn, pool->capres * sizeof *pool->resn);
  }
  pool->res[pool->nres] = p;
  pool->resn[pool->nres++] = n;
  g_pool_reserved += n;
  RETURN(0);
}
EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
  BEGIN(cuMemPoolTrimTo);
  if (!valid_pool(pool)) RETURN(INVALID_VALUE);
  while (pool->nres && g_pool_reserved > keep) {
    pool->nres--;
    g_pool_reserved -= pool->resn[pool->nres];
    mem_give(pool->res[pool->nres]);
  }
  RETURN(0);
}

/* ---- capture modes (minimal) ---- */
/* The same test controls over fake_capture.h's model: "another library's" global-mode capture of
 * `stream`, owned by no thread of the process under test (thread id -1). */
EXPORT void fake_capture_begin(void *stream) {
  pthread_mutex_lock(&g_lock);
  for (int i = 0; i < CAP_MAX; ++i)
    if (!g_caps[i].s) {
      g_caps[i] = (struct fake_cap){(CUstream)stream, 0, -1, 1, 0};
      break;
    }
  pthread_mutex_unlock(&g_lock);
}
EXPORT int fake_capture_end(void) {
  pthread_mutex_lock(&g_lock);
  int r = 0;
  for (int i = 0; i < CAP_MAX; ++i)
    if (g_caps[i].s && g_caps[i].thread == -1) {
      if (g_caps[i].status != 1) r = 901;
      g_caps[i].s = NULL;
    }
  pthread_mutex_unlock(&g_lock);
  return r;
}
EXPORT long fake_capture_refusals(void) {
  pthread_mutex_lock(&g_lock);
  long n = g_cap_violations;
  pthread_mutex_unlock(&g_lock);
  return n;
}

#endif
