/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* fake_capture.h - the fake CUDA driver's model of stream capture and capture modes (issue 19),
 * included by fakecuda.c after its stream and event definitions.
 *
 * What it models (the H100 facts in benchmarks/results/neighbour/driver_probe_h100.log):
 *   - cuStreamBeginCapture(_v2)(stream, mode) starts a capture of `stream` (GLOBAL 0,
 *     THREAD_LOCAL 1, RELAXED 2) owned by the calling thread; cuStreamEndCapture ends it and
 *     returns CUDA_ERROR_STREAM_CAPTURE_INVALIDATED (901) if it was invalidated meanwhile
 *     (*graph = NULL either way); cuStreamIsCapturing reports NONE 0 / ACTIVE 1 / INVALIDATED 2.
 *   - cuThreadExchangeStreamCaptureMode swaps the calling thread's mode (default GLOBAL).
 *   - A "potentially unsafe" call (fake_capture_unsafe below) made by a thread in GLOBAL mode while
 *     any thread captures in GLOBAL mode, or by a thread in a non-RELAXED mode while it captures
 *     itself in a non-RELAXED mode, fails with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (900) and
 *     invalidates those captures (it is counted and logged, and does nothing else).
 *     cuCtxSynchronize invalidates every active capture in every mode (and fails as above where
 *     the thread is prohibited).
 *   - Work enqueued on a capturing stream (launches, async copies and memsets, event records,
 *     stream waits, graph launches) is captured: counted (fake_capture_nodes), not run, never
 *     pending. Synchronising or querying a capturing stream fails with 900 and invalidates it.
 * cuThreadExchangeStreamCaptureMode and cuStreamIsCapturing are counted (fake_count) but not
 * written to the call log, so call-sequence tests read as before.
 * Test control: fake_capture_nodes(stream), fake_capture_violations() (calls refused so far),
 * fake_capture_status(stream).
 * State: g_caps and g_cap_violations under g_lock; the mode is the thread's own.
 */
#ifndef MGPU_CACHED_TEST_FAKE_CAPTURE_H
#define MGPU_CACHED_TEST_FAKE_CAPTURE_H

#define CAP_UNSUPPORTED 900
#define CAP_INVALIDATED 901
#define CAP_MAX 8

static struct fake_cap {
  CUstream s;  /* captured stream; NULL: free entry */
  int mode;    /* mode the capture began with */
  long thread; /* tl_cap_id of the capturing thread */
  int status;  /* 1 active, 2 invalidated */
  long nodes;  /* work captured */
} g_caps[CAP_MAX];                    /* under g_lock */
static long g_cap_violations;         /* under g_lock */
static long g_cap_next_id;            /* under g_lock */
static _Thread_local int tl_cap_mode; /* 0 GLOBAL (the driver's default) */
static _Thread_local long tl_cap_id;  /* 0 until the thread needs one */

static long cap_thread_id(void) { /* lock held */
  if (!tl_cap_id) tl_cap_id = ++g_cap_next_id;
  return tl_cap_id;
}

/* The calls the H100 refuses during another thread's global-mode capture (driver_probe.cu), and
 * the synchronous waits (cuEventSynchronize, cuMemcpy) that the CUDA documentation lists with them. */
static int fake_capture_unsafe(int idx) {
  switch (idx) {
  case IDX_cuCtxSynchronize: case IDX_cuStreamSynchronize: case IDX_cuStreamQuery:
  case IDX_cuEventQuery: case IDX_cuEventSynchronize: case IDX_cuMemAlloc:
  case IDX_cuMemAllocManaged: case IDX_cuMemFree: case IDX_cuMemcpy: case IDX_cuGraphCreate:
  case IDX_cuGraphAddKernelNode: case IDX_cuGraphInstantiate: case IDX_cuGraphLaunch:
  case IDX_cuGraphExecDestroy: case IDX_cuMemPoolTrimTo: case IDX_cuMemAllocFromPoolAsync:
    return 1;
  default:
    return 0;
  }
}

/* enter_call's hook (lock held, after counting): 0, or the failure a refused call returns. */
static int fake_capture_hook(int idx) {
  int any = 0;
  for (int i = 0; i < CAP_MAX; ++i) any |= g_caps[i].s && g_caps[i].status == 1;
  if (!any || !fake_capture_unsafe(idx)) return 0;
  long me = cap_thread_id();
  int refused = 0;
  for (int i = 0; i < CAP_MAX; ++i) {
    struct fake_cap *c = &g_caps[i];
    if (!c->s || c->status != 1) continue;
    int hit = (tl_cap_mode == 0 && c->mode == 0) || (c->thread == me && tl_cap_mode != 2 && c->mode != 2);
    if (hit) refused = 1;
    if (hit || idx == IDX_cuCtxSynchronize) c->status = 2;
  }
  if (!refused) return 0;
  g_cap_violations++;
  return CAP_UNSUPPORTED;
}

static struct fake_cap *cap_of(CUstream s) { /* lock held */
  for (int i = 0; i < CAP_MAX; ++i)
    if (s && g_caps[i].s == s) return &g_caps[i];
  return NULL;
}

/* Work enqueued on `s`: 1 if it was captured (the caller returns success at once). Lock held. */
static int cap_absorb(CUstream s) {
  struct fake_cap *c = cap_of(s);
  if (!c) return 0;
  c->nodes++;
  return 1;
}

/* A synchronisation or query of `s` while it captures: 1 (invalidated; return 900). Lock held. */
static int cap_refuse_wait(CUstream s) {
  struct fake_cap *c = cap_of(s);
  if (!c) return 0;
  c->status = 2;
  g_cap_violations++;
  return 1;
}

static CUresult cap_begin(CUstream s, int mode) {
  pthread_mutex_lock(&g_lock);
  int r = 0;
  if (!s || !known(s) || s->magic != 0x57 || s->destroyed) r = INVALID_HANDLE;
  else if (cap_of(s)) r = 1; /* already capturing: CUDA_ERROR_INVALID_VALUE */
  else {
    r = 2; /* no free entry: out of memory */
    for (int i = 0; i < CAP_MAX; ++i)
      if (!g_caps[i].s) {
        g_caps[i] = (struct fake_cap){s, mode, cap_thread_id(), 1, 0};
        r = 0;
        break;
      }
  }
  pthread_mutex_unlock(&g_lock);
  return r;
}
EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, int mode) { return cap_begin(s, mode); }
EXPORT CUresult cuStreamBeginCapture(CUstream s, int mode) { return cap_begin(s, mode); }
EXPORT CUresult cuStreamEndCapture(CUstream s, void **graph) {
  pthread_mutex_lock(&g_lock);
  struct fake_cap *c = cap_of(s);
  int r = !c ? 1 : c->status == 2 ? CAP_INVALIDATED : 0;
  if (c) c->s = NULL;
  if (graph) *graph = NULL;
  pthread_mutex_unlock(&g_lock);
  return r;
}
EXPORT CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *status) {
  pthread_mutex_lock(&g_lock);
  g_counts[IDX_cuStreamIsCapturing]++;
  struct fake_cap *c = cap_of(s);
  int r = s && !(known(s) && s->magic == 0x57 && !s->destroyed) ? INVALID_HANDLE : 0;
  if (!r) *status = c ? c->status : 0;
  pthread_mutex_unlock(&g_lock);
  return r;
}
EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode) {
  pthread_mutex_lock(&g_lock);
  g_counts[IDX_cuThreadExchangeStreamCaptureMode]++;
  pthread_mutex_unlock(&g_lock);
  int old = tl_cap_mode;
  tl_cap_mode = *mode;
  *mode = old;
  return 0;
}
EXPORT long fake_capture_nodes(void *s) {
  pthread_mutex_lock(&g_lock);
  struct fake_cap *c = cap_of(s);
  long n = c ? c->nodes : -1;
  pthread_mutex_unlock(&g_lock);
  return n;
}
EXPORT int fake_capture_status(void *s) {
  pthread_mutex_lock(&g_lock);
  struct fake_cap *c = cap_of(s);
  int st = c ? c->status : 0;
  pthread_mutex_unlock(&g_lock);
  return st;
}
EXPORT long fake_capture_violations(void) {
  pthread_mutex_lock(&g_lock);
  long n = g_cap_violations;
  pthread_mutex_unlock(&g_lock);
  return n;
}

#endif
