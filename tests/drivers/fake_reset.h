/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* fake_reset.h - the fake CUDA driver's model of a primary-context reset and of sticky errors
 * (issue 19 item 5, G7 / G12), included by fakecuda.c after its object structs.
 *
 * Reset (cuDevicePrimaryCtxReset, what cudaDeviceReset does), as measured on the H100
 * (benchmarks/results/neighbour/driver_probe_h100.log): the context keeps its CUcontext pointer and
 * cuCtxPushCurrent of it succeeds, but every object made in it before the reset (stream, event,
 * module, function, memory) reports CUDA_ERROR_CONTEXT_IS_DESTROYED (709) from then on
 * (cuModuleUnload of an old module: CUDA_ERROR_INVALID_HANDLE). Until cuDevicePrimaryCtxRetain is
 * called again, calls in the context (creating objects, cuCtxGetId) report 709 too; after it, the
 * same pointer works again with a new id (cuCtxGetId: 1, then 2, ...).
 *
 * Sticky errors: launching a kernel whose name starts with "k_assert" succeeds, but from then on
 * every call in that device's context (and on its objects) reports CUDA_ERROR_ASSERT (710), as a
 * device-side assert does; fake_set_sticky(device, code) sets any code (700, 719, ...). A reset
 * clears it (the new context is clean).
 *
 * Every object the fake makes in a context is born with that context's generation (a side table
 * keyed by the object's address); fake_obj_error / fake_ctx_error give the result a call on it
 * must return (0: none). All under g_lock, like the rest of the fake.
 */
#ifndef MGPU_CACHED_TEST_FAKE_RESET_H
#define MGPU_CACHED_TEST_FAKE_RESET_H

#define CONTEXT_IS_DESTROYED 709
#define BIRTH_SLOTS (1u << 16)

static unsigned g_rs_gen[MAXDEV];  /* resets of each device's primary context so far */
static int g_rs_dead[MAXDEV];      /* reset and not retained again since */
static int g_rs_sticky[MAXDEV];    /* sticky error code of the device's context; 0: none */
static long g_rs_resets;           /* cuDevicePrimaryCtxReset calls that succeeded */
static long g_rs_dead_uses;        /* calls on an object made before its context's last reset:
                                    * the real driver may crash on them (issue 19, reset class) */
static struct { const void *p; int dev; unsigned gen; } g_rs_birth[BIRTH_SLOTS];

static size_t rs_hash(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 29;
  x *= 0x9E3779B97F4A7C15ull;
  return (size_t)(x >> 40) & (BIRTH_SLOTS - 1);
}

/* Object p was made in context c (lock held). */
static void fake_born(const void *p, CUcontext c) {
  if (!p || !c) return;
  size_t h = rs_hash(p);
  for (size_t i = 0; i < BIRTH_SLOTS; ++i) {
    size_t k = (h + i) & (BIRTH_SLOTS - 1);
    if (!g_rs_birth[k].p || g_rs_birth[k].p == p) {
      g_rs_birth[k].p = p;
      g_rs_birth[k].dev = c->device;
      g_rs_birth[k].gen = g_rs_gen[c->device];
      return;
    }
  }
}

/* Memory at p was given back (lock held): its address is the C heap's again and may come back as
 * the program's own host memory, which no reset concerns (a stale record made the difftest's host
 * buffers "destroyed" once a freed device block's address came back as one). The record stays as a
 * tombstone (dev -1) so the probe sequences of the others still run through it. */
static void fake_forget(const void *p) {
  if (!p) return;
  size_t h = rs_hash(p);
  for (size_t i = 0; i < BIRTH_SLOTS; ++i) {
    size_t k = (h + i) & (BIRTH_SLOTS - 1);
    if (!g_rs_birth[k].p) return;
    if (g_rs_birth[k].p == p) {
      g_rs_birth[k].dev = -1;
      return;
    }
  }
}

/* The error a call in context c returns: 709 while it is reset and not retained again, its
 * sticky error, or 0 (lock held; NULL: no context, 0). */
static int fake_ctx_error(CUcontext c) {
  /* a context the fake did not make (tests set 0x1234 as "some other context of the caller's"):
   * none of its resets is modelled, and it is never dereferenced */
  if (c < &g_ctx[0] || c >= &g_ctx[MAXDEV]) return 0;
  if (c->device < 0 || c->device >= MAXDEV) return 0;
  if (g_rs_dead[c->device]) return CONTEXT_IS_DESTROYED;
  return g_rs_sticky[c->device];
}

/* The error a call on object p returns: 709 if it was made before its context's last reset, else
 * its context's error (lock held; objects the fake did not record: 0). */
static int fake_obj_error(const void *p) {
  if (!p) return 0;
  size_t h = rs_hash(p);
  for (size_t i = 0; i < BIRTH_SLOTS; ++i) {
    size_t k = (h + i) & (BIRTH_SLOTS - 1);
    if (!g_rs_birth[k].p) return 0;
    if (g_rs_birth[k].p != p) continue;
    int d = g_rs_birth[k].dev;
    if (d < 0) return 0; /* given back (fake_forget) */
    if (g_rs_birth[k].gen != g_rs_gen[d]) {
      g_rs_dead_uses++;
      return CONTEXT_IS_DESTROYED;
    }
    if (g_rs_dead[d]) return CONTEXT_IS_DESTROYED;
    return g_rs_sticky[d];
  }
  return 0;
}

/* Return the first error among a call's context and objects (inside an entry point). */
#define RS_CHECK(expr)                                                                            \
  do {                                                                                            \
    int rs_ = (expr);                                                                             \
    if (rs_) RETURN(rs_);                                                                         \
  } while (0)

/* A launch of function f: a "k_assert..." kernel makes its context's error sticky (lock held). */
static void fake_launched(const struct fake_func *f) {
  if (f && f->lib && f->ctx && strncmp(f->lib->names[f->index], "k_assert", 8) == 0)
    g_rs_sticky[f->ctx->device] = 710; /* CUDA_ERROR_ASSERT */
}

/* Not in mgpu-cached's symbol table (the program calls it): counted in g_rs_resets. */
EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  pthread_mutex_lock(&g_lock);
  int r = 0;
  if (dev < 0 || dev >= ndevices()) {
    r = INVALID_DEVICE;
  } else {
    g_rs_gen[dev]++;
    g_rs_dead[dev] = 1;
    g_rs_sticky[dev] = 0;
    g_rs_resets++;
  }
  pthread_mutex_unlock(&g_lock);
  return r;
}
EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev) { return cuDevicePrimaryCtxReset_v2(dev); }

/* Without g_lock (counted atomically, not logged): the library asks it on module-load hits, which
 * tests fork around (a child must not find g_lock held by a thread of its parent); the state it
 * reads is written under g_lock and read with atomic loads. */
EXPORT CUresult cuCtxGetId(CUcontext ctx, unsigned long long *id) {
  __atomic_fetch_add(&g_counts[IDX_cuCtxGetId], 1, __ATOMIC_RELAXED);
  if (!ctx) ctx = current();
  if (!ctx) return INVALID_CONTEXT;
  int d = ctx->device;
  if (__atomic_load_n(&g_rs_dead[d], __ATOMIC_ACQUIRE)) return CONTEXT_IS_DESTROYED;
  *id = 1ull + __atomic_load_n(&g_rs_gen[d], __ATOMIC_ACQUIRE) + 100ull * (unsigned)d;
  return 0;
}

/* Test control. */
EXPORT void fake_set_sticky(int device, int code) {
  pthread_mutex_lock(&g_lock);
  if (device >= 0 && device < MAXDEV) g_rs_sticky[device] = code;
  pthread_mutex_unlock(&g_lock);
}
EXPORT long fake_resets(void) { return g_rs_resets; }
EXPORT long fake_dead_uses(void) {
  pthread_mutex_lock(&g_lock);
  long n = g_rs_dead_uses;
  pthread_mutex_unlock(&g_lock);
  return n;
}

#endif
