/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* capture.h - the library's own driver calls made safe for other threads' stream captures.
 *
 * In the default (global) capture mode, a "potentially unsafe" driver call from *any* thread while
 * another thread captures a stream in global mode fails with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
 * and invalidates that capture (H100, driver 580: cuStreamQuery, cuEventQuery, cuStreamSynchronize of
 * an unrelated idle stream, cuMemAlloc/cuMemFree, cuGraphInstantiate, cuGraphLaunch,
 * cuGraphExecDestroy, cuMemPoolTrimTo, cuMemAllocFromPoolAsync all do; cuLaunchKernel,
 * cuMemsetD32Async, cuStreamCreate/Destroy, cuEventCreate/Destroy, cuMemGetInfo, cuModuleLoadData
 * and cuStreamIsCapturing do not: benchmarks/neighbour/driver_probe.cu, results in
 * benchmarks/results/neighbour/). In relaxed mode the same calls succeed and leave the capture
 * intact, except cuCtxSynchronize, which invalidates it in every mode: the library never calls it
 * on its own initiative.
 *
 * Rule: a driver call the library makes on its own initiative (one the stock wrapper would not
 * make at that point of the program: pool upkeep, reclamation, graph instantiation and launch,
 * clearing) is bracketed by mc_relaxed_enter / mc_relaxed_leave, which switch the calling thread
 * to relaxed mode and back (cuThreadExchangeStreamCaptureMode, ~30 ns each). Calls the stock
 * wrapper makes too keep the caller's mode, so they fail or succeed exactly as stock's do.
 * No lock: the mode and the brackets' depth (capture.c) are the calling thread's own.
 */
#ifndef MGPU_CACHED_CAPTURE_H
#define MGPU_CACHED_CAPTURE_H

#include "platform/driver.h"
#include "support/thread.h"

typedef struct mc_relaxed {
  unsigned *depth;          /* mc_relaxed_depth's address (this thread's), looked up once */
  CUstreamCaptureMode mode; /* the thread's mode before mc_relaxed_enter */
  int swapped;              /* 1 when mc_relaxed_leave must restore it */
  int counted;              /* 1 when it counts in mc_relaxed_depth */
} mc_relaxed;

/* Relaxed brackets open on the calling thread (capture.c): inside one, the mode is relaxed already
 * (only the library's own calls run there), so an inner bracket makes no driver call. */
extern _Thread_local unsigned mc_relaxed_depth MC_TLS_LOCAL; /* support/thread.h */

static inline void mc_relaxed_enter(mc_relaxed *r) {
  unsigned *depth = MC_TLS_ADDR(mc_relaxed_depth);
  r->depth = depth;
  r->swapped = 0;
  r->counted = 0;
  if (*depth) {
    ++*depth;
    r->counted = 1;
    return;
  }
  if (mc_cu.cuThreadExchangeStreamCaptureMode) {
    r->mode = MC_CU_STREAM_CAPTURE_MODE_RELAXED;
    r->swapped = mc_cu.cuThreadExchangeStreamCaptureMode(&r->mode) == 0;
    if (r->swapped) {
      *depth = 1;
      r->counted = 1;
    }
  }
}

static inline void mc_relaxed_leave(mc_relaxed *r) {
  if (r->counted) --*r->depth;
  if (r->swapped) mc_cu.cuThreadExchangeStreamCaptureMode(&r->mode);
  r->swapped = 0;
  r->counted = 0;
}

/* 1 when `stream` is being captured (or its capture was invalidated), 0 when not or unknown.
 * cuStreamIsCapturing is safe in every mode (~70 ns). */
static inline int mc_stream_capturing(CUstream stream) {
  CUstreamCaptureStatus st = MC_CU_STREAM_CAPTURE_STATUS_NONE;
  if (!mc_cu.cuStreamIsCapturing || mc_cu.cuStreamIsCapturing(stream, &st) != 0) return 0;
  return st != MC_CU_STREAM_CAPTURE_STATUS_NONE;
}

#endif
