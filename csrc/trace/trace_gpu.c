/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* trace_gpu.c - GPU spans of the trace (MGPU_CACHED_TRACE_GPU=1, see trace.h): each traced kernel,
 * copy and memset is bracketed by two timing events recorded on the driver stream it was enqueued
 * on (launch.c and memory.c call mc_trace_gpu_begin/end right around the enqueue). The events come
 * from a pool (pairs, per device) and are read back later with cuEventElapsedTime, never by
 * waiting: after each traced synchronize call (whose work is then done) the oldest pending pairs
 * are checked with cuEventQuery, an enqueue checks two only when many are pending (the launch
 * path stays at two cuEventRecord), and the writer at exit polls for at most a bounded time.
 * Unfinished or failed ones are counted as dropped.
 *
 * Clock alignment: per device a reference event is recorded on a stream of its own (empty, so it
 * completes at once) and polled to completion; its GPU time is taken as the midpoint of the host
 * times around record and completion (the third of three tries; the first can be slow). A span's
 * start is the reference's host time plus cuEventElapsedTime(reference, start), its length
 * cuEventElapsedTime(start, end). A new reference is taken every second (cuEventElapsedTime returns
 * a float of milliseconds); old ones are destroyed once no pending pair uses them.
 *
 * cuEventElapsedTime is not in the main symbol table: it is resolved here from the loaded driver
 * (cuEventElapsedTime_v2 or cuEventElapsedTime; hipEventElapsedTime on the HIP backend).
 *
 * Locking rule: g_trace_gpu_lock guards the free lists, the pending list, the pair count and the reference
 * table with the references' user counts. No driver call is made under it.
 */
#include "trace/trace.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "platform/backend.h"
#include "platform/context.h"
#include "platform/driver.h"

#define MAX_DEV 64
#define MAX_PAIRS 4096 /* event pairs made in all (pending and free); beyond, spans are dropped */
#define POLL_ABOVE 256 /* pending pairs above which a traced enqueue checks two of them */
#define REF_NS 1000000000ULL
#define NOT_READY 600  /* CUDA_ERROR_NOT_READY, hipErrorNotReady */

typedef CUresult (*elapsed_fn)(float *ms, CUevent start, CUevent end);

/* the part the trace core calls (trace.h: mc_trace_gpu_ops, registered at load below) */
static void mc_trace_gpu_drain(int wait_ms);
static uint64_t mc_trace_gpu_dropped(void);
static void mc_trace_gpu_poll(int max);
static uint64_t mc_trace_gpu_pending(void);
static void mc_trace_gpu_forget(void);

typedef struct ref {
  CUevent ev;
  uint64_t host_ns; /* host time of the event's GPU time */
  uint32_t users;   /* pending pairs using it (g_trace_gpu_lock) */
  int retired;      /* replaced by a newer one (g_trace_gpu_lock) */
} ref;

typedef struct pair {
  CUevent e0, e1;   /* timing events of one device, made once */
  int device;
  ref *ref;         /* the reference when e0 was recorded */
  mc_trace_rec rec; /* the GPU span being built */
  struct pair *next;
} pair;

static pthread_mutex_t g_trace_gpu_lock = PTHREAD_MUTEX_INITIALIZER;
static pair *g_free[MAX_DEV];       /* g_trace_gpu_lock */
static pair *g_head, *g_tail;       /* g_trace_gpu_lock: pending, oldest first */
static uint32_t g_npairs;           /* g_trace_gpu_lock */
static ref *g_ref[MAX_DEV];         /* g_trace_gpu_lock: current reference per device */
static CUstream g_ref_stream[MAX_DEV]; /* g_trace_gpu_lock: the references' own streams */
static uint64_t g_gpu_dropped;          /* atomic */
static uint32_t g_npending;         /* pending list length: written under g_trace_gpu_lock, read atomically */
static int g_exit_armed;            /* atomic */
static elapsed_fn g_elapsed;        /* written once under g_trace_gpu_once (atomic: read outside it) */
static pthread_once_t g_trace_gpu_once = PTHREAD_ONCE_INIT;

static _Thread_local pair *tl_pair; /* between begin and end of this thread's enqueue */

static void resolve(void) {
  void *lib = dlopen(mc_driver_path(), RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return;
  elapsed_fn f;
  if (mc_backend() == MC_BACKEND_HIP) {
    f = (elapsed_fn)dlsym(lib, "hipEventElapsedTime");
  } else {
    f = (elapsed_fn)dlsym(lib, "cuEventElapsedTime_v2");
    if (!f) f = (elapsed_fn)dlsym(lib, "cuEventElapsedTime");
  }
  __atomic_store_n(&g_elapsed, f, __ATOMIC_RELEASE);
  /* the handle stays open: the driver is never unloaded */
}

static void drop(void) { __atomic_fetch_add(&g_gpu_dropped, 1, __ATOMIC_RELAXED); }

static uint64_t mc_trace_gpu_dropped(void) { return __atomic_load_n(&g_gpu_dropped, __ATOMIC_RELAXED); }

/* Release one user of a reference (g_trace_gpu_lock held); returns an event to destroy outside the lock. */
static CUevent unref(ref *r) {
  if (!r || --r->users || !r->retired) return NULL;
  CUevent ev = r->ev;
  free(r);
  return ev;
}

/* Take a new reference for `device` (its context current). NULL on failure. */
static ref *new_ref(int device) {
  pthread_mutex_lock(&g_trace_gpu_lock);
  CUstream s = g_ref_stream[device];
  pthread_mutex_unlock(&g_trace_gpu_lock);
  if (!s) {
    if (mc_cu.cuStreamCreate(&s, MC_CU_STREAM_NON_BLOCKING)) return NULL;
    pthread_mutex_lock(&g_trace_gpu_lock);
    if (g_ref_stream[device]) { /* another thread made one: keep it (this one leaks, rarely) */
      s = g_ref_stream[device];
    } else {
      g_ref_stream[device] = s;
    }
    pthread_mutex_unlock(&g_trace_gpu_lock);
  }
  ref *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  if (mc_cu.cuEventCreate(&r->ev, 0)) {
    free(r);
    return NULL;
  }
  int ok = 0;
  for (int i = 0; i < 3; ++i) { /* the first records may be slow: the last one is kept */
    uint64_t t0 = mc_trace_now();
    if (mc_cu.cuEventRecord(r->ev, s)) break;
    CUresult q;
    while ((q = mc_cu.cuEventQuery(r->ev)) == NOT_READY && mc_trace_now() - t0 < 10000000ULL) {
    }
    uint64_t t1 = mc_trace_now();
    ok = q == 0; /* not done within 10 ms, or an error: no reference */
    if (!ok) break;
    r->host_ns = t0 + (t1 - t0) / 2;
  }
  if (!ok) {
    mc_cu.cuEventDestroy(r->ev);
    free(r);
    return NULL;
  }
  return r;
}

/* The current reference of `device` with one user added, refreshed when older than REF_NS. */
static ref *use_ref(int device) {
  pthread_mutex_lock(&g_trace_gpu_lock);
  ref *r = g_ref[device];
  uint64_t now = mc_trace_now();
  if (r && now - r->host_ns < REF_NS) {
    r->users++;
    pthread_mutex_unlock(&g_trace_gpu_lock);
    return r;
  }
  pthread_mutex_unlock(&g_trace_gpu_lock);
  ref *fresh = new_ref(device);
  CUevent old_ev = NULL;
  pthread_mutex_lock(&g_trace_gpu_lock);
  if (fresh) {
    ref *old = g_ref[device];
    g_ref[device] = fresh;
    if (old) {
      old->retired = 1;
      if (!old->users) {
        old_ev = old->ev;
        free(old);
      }
    }
  }
  r = g_ref[device];
  if (r) r->users++;
  pthread_mutex_unlock(&g_trace_gpu_lock);
  if (old_ev) mc_cu.cuEventDestroy(old_ev);
  if (!__atomic_exchange_n(&g_exit_armed, 1, __ATOMIC_ACQ_REL))
    mc_trace_register_exit(); /* after the driver's own exit handler: ours runs first */
  return r;
}

static pair *take_pair(int device) {
  pthread_mutex_lock(&g_trace_gpu_lock);
  pair *p = g_free[device];
  if (p) {
    g_free[device] = p->next;
  } else if (g_npairs < MAX_PAIRS) {
    g_npairs++;
  } else {
    pthread_mutex_unlock(&g_trace_gpu_lock);
    return NULL;
  }
  pthread_mutex_unlock(&g_trace_gpu_lock);
  if (p) return p;
  p = calloc(1, sizeof *p);
  if (p && mc_cu.cuEventCreate(&p->e0, 0) == 0) {
    if (mc_cu.cuEventCreate(&p->e1, 0) == 0) {
      p->device = device;
      return p;
    }
    mc_cu.cuEventDestroy(p->e0);
  }
  free(p);
  pthread_mutex_lock(&g_trace_gpu_lock);
  g_npairs--;
  pthread_mutex_unlock(&g_trace_gpu_lock);
  return NULL;
}

/* Back to its free list, its reference released (g_trace_gpu_lock held); an event to destroy or NULL. */
static CUevent give_back(pair *p) {
  CUevent ev = unref(p->ref);
  p->ref = NULL;
  p->next = g_free[p->device];
  g_free[p->device] = p;
  return ev;
}

/* A pair back to its free list (takes g_trace_gpu_lock; destroys a retired reference outside it). */
static void recycle(pair *p) {
  pthread_mutex_lock(&g_trace_gpu_lock);
  CUevent ev = give_back(p);
  pthread_mutex_unlock(&g_trace_gpu_lock);
  if (ev) mc_cu.cuEventDestroy(ev);
}

/* A pair at the back of the pending list (takes g_trace_gpu_lock). */
static void push_pending(pair *p) {
  p->next = NULL;
  pthread_mutex_lock(&g_trace_gpu_lock);
  if (g_tail) g_tail->next = p;
  else g_head = p;
  g_tail = p;
  __atomic_store_n(&g_npending, g_npending + 1, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&g_trace_gpu_lock);
}

/* Check up to `max` pending pairs: finished ones become GPU spans, others go to the back.
 * Returns how many are still pending. */
static size_t poll(size_t max) {
  for (size_t i = 0; i < max; ++i) {
    pthread_mutex_lock(&g_trace_gpu_lock);
    pair *p = g_head;
    if (p) {
      g_head = p->next;
      if (!g_head) g_tail = NULL;
      __atomic_store_n(&g_npending, g_npending - 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&g_trace_gpu_lock);
    if (!p) break;
    CUresult q = mc_cu.cuEventQuery(p->e1);
    if (q == NOT_READY) {
      push_pending(p);
      continue;
    }
    float start = 0, len = 0;
    if (q == 0 && g_elapsed(&start, p->ref->ev, p->e0) == 0 &&
        g_elapsed(&len, p->e0, p->e1) == 0 && start >= 0 && len >= 0) {
      p->rec.t0 = p->ref->host_ns + (uint64_t)((double)start * 1e6);
      p->rec.t1 = p->rec.t0 + (uint64_t)((double)len * 1e6);
      mc_trace_keep(&p->rec);
    } else {
      drop();
    }
    recycle(p);
  }
  return mc_trace_gpu_pending();
}

void mc_trace_gpu_begin(CUstream driver_stream, int device) {
  mc_trace_span *sp = mc_trace_current();
  if (!mc_trace_gpu || !sp || !(sp->rec.flags & MC_TRACE_F_GPU) || tl_pair) return;
  sp->rec.flags &= (uint16_t)~MC_TRACE_F_GPU; /* one GPU span per call */
  pthread_once(&g_trace_gpu_once, resolve);
  if (!g_elapsed || device < 0 || device >= MAX_DEV || !mc_driver_loaded()) return drop();
  mc_ctx_scope scope; /* events are made in the device's context */
  if (MC_FAILED(mc_ctx_enter(device, &scope))) return drop();
  if (__atomic_load_n(&g_npending, __ATOMIC_RELAXED) > POLL_ABOVE) poll(2);
  ref *r = use_ref(device);
  pair *p = r ? take_pair(device) : NULL;
  mc_ctx_leave(&scope);
  if (p) {
    p->ref = r;
    memset(&p->rec, 0, sizeof p->rec);
    p->rec.kind = MC_TRACE_GPU_SPAN;
    p->rec.call = sp->rec.call;
    p->rec.stream = sp->rec.stream;              /* the handle the program passed */
    p->rec.res = (uint64_t)(uintptr_t)driver_stream; /* where it runs: the span's track */
    p->rec.name = sp->rec.name;
    p->rec.seq = sp->rec.seq;
    p->rec.tid = sp->rec.tid;
    p->rec.a = sp->rec.b; /* copies: bytes */
    p->rec.device = (int16_t)device;
    p->rec.b = mc_trace_now(); /* the enqueue's host time (the flow arrow's start) */
    if (mc_cu.cuEventRecord(p->e0, driver_stream) == 0) {
      tl_pair = p;
      return;
    }
  }
  drop();
  if (p) return recycle(p);
  if (!r) return;
  pthread_mutex_lock(&g_trace_gpu_lock);
  CUevent ev = unref(r);
  pthread_mutex_unlock(&g_trace_gpu_lock);
  if (ev) mc_cu.cuEventDestroy(ev);
}

void mc_trace_gpu_end(CUstream driver_stream, int result) {
  pair *p = tl_pair;
  if (!p) return;
  tl_pair = NULL;
  if (result == 0 && mc_cu.cuEventRecord(p->e1, driver_stream) == 0) return push_pending(p);
  if (result == 0) drop(); /* (a failed enqueue has no span to lose) */
  recycle(p);
}

static void mc_trace_gpu_drain(int wait_ms) {
  if (!__atomic_load_n(&g_elapsed, __ATOMIC_ACQUIRE)) return;
  uint64_t start = mc_trace_now();
  for (;;) {
    size_t n = mc_trace_gpu_pending();
    if (!n || poll(n) == 0) return;
    if (mc_trace_now() - start >= (uint64_t)wait_ms * 1000000ULL) break;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  /* still unfinished ones stay pending (the writer counts them as dropped; a later write may
   * still read them) */
}

static uint64_t mc_trace_gpu_pending(void) {
  return __atomic_load_n(&g_npending, __ATOMIC_RELAXED);
}

static void mc_trace_gpu_forget(void) {
  pthread_mutex_init(&g_trace_gpu_lock, NULL);
  memset(g_free, 0, sizeof g_free);
  g_head = g_tail = NULL;
  g_npairs = 0;
  g_npending = 0;
  memset(g_ref, 0, sizeof g_ref);
  memset(g_ref_stream, 0, sizeof g_ref_stream);
  __atomic_store_n(&g_gpu_dropped, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&g_exit_armed, 0, __ATOMIC_RELAXED);
  tl_pair = NULL;
}

static void mc_trace_gpu_poll(int max) {
  if (__atomic_load_n(&g_elapsed, __ATOMIC_ACQUIRE) &&
      __atomic_load_n(&g_npending, __ATOMIC_RELAXED))
    poll((size_t)max);
}

static const mc_trace_gpu_ops k_ops = {
    .drain = mc_trace_gpu_drain,
    .dropped = mc_trace_gpu_dropped,
    .poll = mc_trace_gpu_poll,
    .pending = mc_trace_gpu_pending,
    .forget = mc_trace_gpu_forget,
};

__attribute__((constructor)) static void mc_trace_gpu_register(void) {
  mc_trace_gpu_set_ops(&k_ops);
}
