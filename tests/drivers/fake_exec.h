/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* fake_exec.h - the executing mode of fakecuda.c (FAKECUDA_EXEC=1 in the environment; used by the
 * differential tester, tests/difftest): the fake then *runs* the work it is given, so results of a
 * program can be compared between the stock and the cached behaviour of the library.
 *
 * Model: memory is host memory; cuMemAlloc returns zeroed memory (the real driver does when it maps
 * fresh pages, not when it hands out a freed range again while other allocations are live). Every
 * stream, and the NULL stream of each context, is a FIFO of deferred operations: kernels (the
 * difftest kernels dt_fill, dt_add, dt_scale, dt_slow are implemented here in C; other kernels do
 * nothing), cuMemcpyAsync, cuMemsetD32Async/D16Async, event records and event waits. Work runs
 *  - when the host forces it: cuStreamSynchronize and cuEventSynchronize run the stream (the
 *    event's stream) up to that point, with whatever it waits for on other streams;
 *    cuCtxSynchronize runs every stream of the current context; cuMemFree first runs every stream
 *    of the context the memory was allocated in (the real cuMemFree waits for the device);
 *    a synchronous cuMemcpy runs the context's NULL stream first;
 *  - otherwise lazily, in a seeded random interleaving that respects stream order and event
 *    waits: at each fake_exec_tick() (the difftest runner calls it before each operation of its
 *    program), with a probability chosen per seed (0, 1/16, 1/4 or 5/8), one to three runnable
 *    operations of random streams run; a cuStreamQuery / cuEventQuery first runs one operation of
 *    that stream with probability 1/2 (so polling always makes progress).
 * A wait captures the event's latest record at the time of the wait, as CUDA does; a wait on an
 * event never recorded is a no-op. The interleaving is a function of the seed (FAKECUDA_SEED, or
 * fake_exec_seed()), of the ticks and of the queries; ticks and queries draw from separate random
 * streams, so the library's own driver calls (which differ between its modes and with its cache
 * state) do not shift the background schedule of a program.
 * dt_bump (tests/difftest/modglobal.cu) reads and increments a module-scope counter: one per
 * loaded module instance (fake_lib), 0 at load, kept in g_xglob (x_module_counter).
 * Exposes exactly the races a real GPU can show, at operation granularity (an operation runs
 * atomically). All of it runs under the fake's one lock (g_lock), like everything in fakecuda.c.
 *
 * Included by fakecuda.c after its handle structs (CUstream_st has `xq`, CUevent_st has `xrec`).
 */
#ifndef MGPU_CACHED_TEST_FAKE_EXEC_H
#define MGPU_CACHED_TEST_FAKE_EXEC_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { X_KERNEL, X_COPY, X_SET32, X_SET16, X_RECORD, X_WAIT };

struct x_queue;
typedef struct x_rec { int done; struct x_queue *q; } x_rec; /* one cuEventRecord; never freed */
typedef struct x_op {
  int kind;
  char name[24];    /* X_KERNEL: the kernel's name */
  uint64_t a[6];    /* kernel arguments by value; copy: dst, src, bytes; set: dst, value, count */
  x_rec *rec;       /* X_RECORD: completed by it; X_WAIT: waited for */
  struct x_op *next;
} x_op;
typedef struct x_queue {
  CUcontext ctx;
  x_op *head, *tail;
  struct x_queue *all_next; /* every queue ever made (destroyed streams keep running) */
} x_queue;

static int g_exec = -1;            /* executing mode on (FAKECUDA_EXEC=1); read once */
static uint64_t g_xrng = 0x9E3779B97F4A7C15ull;      /* queries */
static uint64_t g_xrng_tick = 0x2545F4914F6CDD1Dull; /* ticks */
static unsigned g_xlazy = 4;                         /* a tick runs work with probability lazy/16 */
static x_queue *g_xq_all;
static x_queue *g_xnull[MAXDEV];   /* the NULL stream of each primary context */
static struct { uintptr_t p; CUcontext ctx; } *g_xmem; /* allocation -> context */
static size_t g_nxmem, g_capxmem;

static int exec_on(void) {
  if (g_exec < 0) {
    const char *v = getenv("FAKECUDA_EXEC"), *s = getenv("FAKECUDA_SEED");
    g_exec = v && *v == '1';
    if (s) {
      uint64_t v = strtoull(s, NULL, 0);
      g_xrng = v * 2 + 1, g_xrng_tick = v * 6 + 5;
    }
  }
  return g_exec;
}

static uint64_t x_next(uint64_t *x) {
  *x ^= *x >> 12;
  *x ^= *x << 25;
  *x ^= *x >> 27;
  return *x * 0x2545F4914F6CDD1Dull;
}
static uint64_t x_rand(void) { return x_next(&g_xrng); }

/* Reseed the interleaving (the difftest runner calls it before each program). */
EXPORT void fake_exec_seed(uint64_t seed) {
  static const unsigned lazy[4] = {0, 1, 4, 10};
  pthread_mutex_lock(&g_lock);
  g_xrng = seed * 2 + 1;
  g_xrng_tick = seed * 6 + 5;
  g_xlazy = lazy[x_next(&g_xrng_tick) % 4];
  pthread_mutex_unlock(&g_lock);
}

static x_queue *x_new_queue(CUcontext ctx) {
  x_queue *q = calloc(1, sizeof *q);
  q->ctx = ctx;
  q->all_next = g_xq_all;
  g_xq_all = q;
  return q;
}

static void x_push(x_queue *q, x_op *op) {
  op->next = NULL;
  if (q->tail) q->tail->next = op;
  else q->head = op;
  q->tail = op;
}

/* The module-scope counter of dt_bump in module instance `lib` (0 when first asked for). */
static struct { const void *lib; uint32_t v; } *g_xglob;
static size_t g_nxglob, g_capxglob;
static uint32_t *x_module_counter(const void *lib) {
  for (size_t i = 0; i < g_nxglob; ++i)
    if (g_xglob[i].lib == lib) return &g_xglob[i].v;
  if (g_nxglob == g_capxglob) {
    g_capxglob = g_capxglob ? 2 * g_capxglob : 64;
    g_xglob = realloc(g_xglob, g_capxglob * sizeof *g_xglob);
  }
  g_xglob[g_nxglob].lib = lib;
  g_xglob[g_nxglob].v = 0;
  return &g_xglob[g_nxglob++].v;
}

/* ---- the kernels (same arithmetic as tests/difftest/kernels.cu, 32-bit wrapping) ---- */
static void x_kernel(const x_op *op) {
  uint32_t *p = (uint32_t *)(uintptr_t)op->a[0];
  int n = (int)op->a[1];
  if (strcmp(op->name, "dt_fill") == 0) { /* (p, n, v) */
    for (int i = 0; i < n; ++i) p[i] = (uint32_t)op->a[2] ^ ((uint32_t)i * 0x9E3779B1u);
  } else if (strcmp(op->name, "dt_add") == 0) { /* (dst, n, src) */
    const uint32_t *src = (const uint32_t *)(uintptr_t)op->a[2];
    for (int i = 0; i < n; ++i) p[i] = p[i] * 3u + src[i];
  } else if (strcmp(op->name, "dt_scale") == 0) { /* (p, n, k) */
    for (int i = 0; i < n; ++i) p[i] = p[i] * (uint32_t)op->a[2] + 1u;
  } else if (strcmp(op->name, "dt_slow") == 0) { /* (p, n, v, spins): no time here */
    for (int i = 0; i < n; ++i) p[i] = (uint32_t)op->a[2] + (uint32_t)i;
  } else if (strcmp(op->name, "dt_bump") == 0 && op->a[3]) { /* (p, n); a[3]: its module */
    uint32_t *g = x_module_counter((const void *)(uintptr_t)op->a[3]), c = *g;
    for (int i = 0; i < n && p; ++i) p[i] = (c * 0x01000193u) ^ (uint32_t)i;
    *g = c + 1;
  }
}

static void x_exec_head(x_queue *q) {
  x_op *op = q->head;
  q->head = op->next;
  if (!q->head) q->tail = NULL;
  switch (op->kind) {
  case X_KERNEL: x_kernel(op); break;
  case X_COPY: memcpy((void *)(uintptr_t)op->a[0], (void *)(uintptr_t)op->a[1], op->a[2]); break;
  case X_SET32:
    for (uint64_t i = 0; i < op->a[2]; ++i) ((uint32_t *)(uintptr_t)op->a[0])[i] = (uint32_t)op->a[1];
    break;
  case X_SET16:
    for (uint64_t i = 0; i < op->a[2]; ++i) ((uint16_t *)(uintptr_t)op->a[0])[i] = (uint16_t)op->a[1];
    break;
  case X_RECORD: op->rec->done = 1; break;
  case X_WAIT: break;
  }
  free(op);
}

static void x_run_until(x_rec *r);
/* Run the head of q, first what it waits for. */
static void x_advance(x_queue *q) {
  if (!q->head) return;
  if (q->head->kind == X_WAIT && !q->head->rec->done) x_run_until(q->head->rec);
  x_exec_head(q);
}
static void x_run_until(x_rec *r) {
  while (!r->done) x_advance(r->q);
}
static void x_drain(x_queue *q) {
  while (q->head) x_advance(q);
}
/* Run every queue of ctx (NULL: of every context). */
static void x_drain_ctx(CUcontext ctx) {
  for (x_queue *q = g_xq_all; q; q = q->all_next)
    if (!ctx || q->ctx == ctx) x_drain(q);
}

/* One runnable operation of a random queue, if any. */
static void x_step_random(uint64_t *rng) {
  int n = 0;
  for (x_queue *q = g_xq_all; q; q = q->all_next)
    if (q->head && (q->head->kind != X_WAIT || q->head->rec->done)) ++n;
  if (!n) return;
  int k = (int)(x_next(rng) % (uint64_t)n);
  for (x_queue *q = g_xq_all; q; q = q->all_next)
    if (q->head && (q->head->kind != X_WAIT || q->head->rec->done) && k-- == 0) {
      x_exec_head(q);
      return;
    }
}

/* ---- hooks called by fakecuda.c's entry points (lock held; only when exec_on()) ---- */

/* Background progress between the program's operations. */
EXPORT void fake_exec_tick(void) {
  pthread_mutex_lock(&g_lock);
  if (x_next(&g_xrng_tick) % 16 < g_xlazy) {
    int steps = 1 + (int)(x_next(&g_xrng_tick) % 3);
    for (int i = 0; i < steps; ++i) x_step_random(&g_xrng_tick);
  }
  pthread_mutex_unlock(&g_lock);
}

static x_queue *x_queue_of(CUstream s, CUcontext cur) {
  if (s) {
    if (!s->xq) s->xq = x_new_queue(s->ctx);
    return s->xq;
  }
  int d = cur ? cur->device : 0;
  if (!g_xnull[d]) g_xnull[d] = x_new_queue(cur ? cur : &g_ctx[0]);
  return g_xnull[d];
}

static void x_enqueue(CUstream s, CUcontext cur, int kind, uint64_t a0, uint64_t a1, uint64_t a2) {
  x_op *op = calloc(1, sizeof *op);
  op->kind = kind;
  op->a[0] = a0, op->a[1] = a1, op->a[2] = a2;
  x_push(x_queue_of(s, cur), op);
}

/* A launch: the arguments are read now, as the driver does. */
static void x_launch(const char *name, void **params, CUstream s, CUcontext cur) {
  x_op *op = calloc(1, sizeof *op);
  op->kind = X_KERNEL;
  snprintf(op->name, sizeof op->name, "%s", name);
  if (params && strncmp(name, "dt_", 3) == 0) {
    op->a[0] = (uint64_t)(uintptr_t) * (void **)params[0];
    op->a[1] = (uint64_t) * (int *)params[1];
    if (strcmp(name, "dt_add") == 0) op->a[2] = (uint64_t)(uintptr_t) * (void **)params[2];
    else if (strcmp(name, "dt_bump") != 0) op->a[2] = *(uint32_t *)params[2];
  }
  /* dt_bump: the module instance of the function being launched (launch_common set it) */
  if (strcmp(name, "dt_bump") == 0 && g_last_function)
    op->a[3] = (uint64_t)(uintptr_t)((struct fake_func *)g_last_function)->lib;
  x_push(x_queue_of(s, cur), op);
}

static void x_record(CUevent e, CUstream s, CUcontext cur) {
  x_queue *q = x_queue_of(s, cur);
  x_rec *r = calloc(1, sizeof *r);
  r->q = q;
  e->xrec = r;
  x_op *op = calloc(1, sizeof *op);
  op->kind = X_RECORD;
  op->rec = r;
  x_push(q, op);
}

static void x_wait(CUstream s, CUevent e, CUcontext cur) {
  if (!e->xrec || e->xrec->done) return;
  x_op *op = calloc(1, sizeof *op);
  op->kind = X_WAIT;
  op->rec = e->xrec;
  x_push(x_queue_of(s, cur), op);
}

static int x_stream_query(CUstream s, CUcontext cur) {
  x_queue *q = x_queue_of(s, cur);
  if (q->head && x_rand() % 2) x_advance(q);
  return q->head ? NOT_READY : 0;
}

static int x_event_query(CUevent e) {
  if (!e->xrec || e->xrec->done) return 0;
  if (x_rand() % 2) x_advance(e->xrec->q);
  return e->xrec->done ? 0 : NOT_READY;
}

static void x_note_alloc(CUdeviceptr p, CUcontext ctx) {
  if (g_nxmem == g_capxmem) {
    g_capxmem = g_capxmem ? 2 * g_capxmem : 64;
    g_xmem = realloc(g_xmem, g_capxmem * sizeof *g_xmem);
  }
  g_xmem[g_nxmem].p = (uintptr_t)p;
  g_xmem[g_nxmem++].ctx = ctx;
}

/* Before cuMemFree: every stream of the allocation's context runs to its end. */
static void x_before_free(CUdeviceptr p) {
  CUcontext ctx = NULL;
  for (size_t i = 0; i < g_nxmem; ++i)
    if (g_xmem[i].p == (uintptr_t)p) {
      ctx = g_xmem[i].ctx;
      g_xmem[i] = g_xmem[--g_nxmem];
      break;
    }
  x_drain_ctx(ctx); /* unknown memory: every context */
}

#endif
