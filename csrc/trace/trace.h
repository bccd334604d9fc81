/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* trace.h - the timeline trace: every mgpu* call as a host span, and with GPU timing every kernel
 * and copy as a span on the track of the driver stream it ran on (each span names the stream handle
 * the program passed: generated code makes a new handle per step, and the pool gives each step's
 * handles the same few driver streams), written as Chrome trace-event JSON (Perfetto,
 * chrome://tracing) at exit; NVTX ranges named after kernels when a profiler injected NVTX.
 *
 *   MGPU_CACHED_TRACE=FILE        write the trace to FILE at exit ("%p" in FILE: the process id;
 *                                 a forked child without "%p" writes FILE.<pid>)
 *   MGPU_CACHED_TRACE_GPU=1       also time each kernel, copy and memset on the GPU (two pooled
 *                                 timing events around each, read back without ever blocking)
 *   MGPU_CACHED_TRACE_LIMIT=n     host and GPU records kept (default 1048576, ~100 bytes each;
 *                                 rounded up to whole chunks of 256); later ones are counted as
 *                                 dropped
 *   NVTX_INJECTION64_PATH         set by Nsight Systems: each call pushes an NVTX range (a launch's
 *                                 named after its kernel); nothing happens without it
 *
 * The variables are parsed by config.c (MC_CONFIG_VARS), from the library constructor (trace.c)
 * and only when MGPU_CACHED_TRACE is set. When neither it nor NVTX_INJECTION64_PATH is set,
 * mc_trace_on stays 0 and each mgpu* entry point pays one predictable branch on it (MC_TRACE_ON),
 * nothing else; the stat counters and launch.c's chain path test it too, the GPU-span hooks of
 * the launch/copy paths test mc_trace_gpu (one branch each).
 *
 * Files: trace.c (state, per-thread record chunks, clock, exit and fork handling, the JSON
 * writer), trace_abi.c (one traced wrapper per mgpu* entry point), trace_gpu.c (timing events),
 * trace_nvtx.c (NVTX through the injection library, loaded with dlopen).
 */
#ifndef MGPU_CACHED_TRACE_H
#define MGPU_CACHED_TRACE_H

#include <stdint.h>

#include "platform/cuda_api.h"

extern int mc_trace_on;  /* 1 when tracing or NVTX is on; written once by the constructor */
extern int mc_trace_gpu; /* 1 when GPU spans are recorded too; written once by the constructor */

#define MC_TRACE_ON() __builtin_expect(mc_trace_on, 0)

/* At the top of every exported mgpu* function: when tracing is on, hand the call to its traced
 * wrapper (trace_abi.c), which records the span around a second call of the same entry point; that
 * second call runs untraced (mc_trace_take sees the bypass mark). Nested mgpu* calls made inside
 * an entry point are traced as children. */
#define MC_TRACE_CALL(wrapper_call)                                                               \
  do {                                                                                            \
    if (MC_TRACE_ON() && mc_trace_take()) return wrapper_call;                                    \
  } while (0)

/* 1 when this entry point should be traced; 0 (and the mark cleared) for a wrapper's own call. */
int mc_trace_take(void);

/* ---- what the wrappers use (trace.c) ---- */

typedef enum {
#define MC_TRACE_CALLS(X)                                                                         \
  X(ModuleLoad) X(ModuleLoadJIT) X(ModuleUnload) X(ModuleGetFunction) X(LaunchKernel)             \
  X(LaunchKernelCooperative) X(LaunchClusterKernel) X(StreamCreate) X(StreamDestroy)              \
  X(StreamSynchronize) X(StreamWaitEvent) X(EventCreate) X(EventDestroy) X(EventSynchronize)      \
  X(EventRecord) X(MemAlloc) X(MemFree) X(Memcpy) X(Memset32) X(Memset16) X(MemHostRegister)     \
  X(MemHostRegisterMemRef) X(MemHostUnregister) X(MemHostUnregisterMemRef) X(SetDefaultDevice)    \
  X(TensorMapEncodeTiled) X(TensorMapEncodeTiledMemref) X(ModuleGetGlobal)                        \
  X(MemGetDeviceMemRef1dFloat) X(MemGetDeviceMemRef1dInt32)
#define MC_TRACE_ENUM(name) MC_TR_##name,
  MC_TRACE_CALLS(MC_TRACE_ENUM)
#undef MC_TRACE_ENUM
      MC_TR_COUNT
} mc_trace_call_id;

enum { MC_TRACE_HOST = 0, MC_TRACE_GPU_SPAN = 1 };

/* One record: a host span (an mgpu* call) or a GPU span (a kernel or copy on a stream). */
typedef struct mc_trace_rec {
  uint64_t t0, t1;    /* CLOCK_MONOTONIC ns (GPU spans: GPU times mapped onto it) */
  uint64_t stream;    /* the stream handle the program passed (0: the NULL stream / none) */
  uint64_t a, b, res; /* call-specific arguments (bytes, pointers, handles) and the result;
                       * GPU spans: a = bytes, b = host time of the enqueue, res = driver stream */
  uint64_t notes;     /* bit i: statistics counter i (stats.h) moved during the call */
  uint32_t grid[3], block[3];
  int32_t smem;
  uint32_t name;      /* kernel name id (trace.c's name table), 0: none */
  uint32_t seq;       /* launch or copy number: links a host span to its GPU span */
  uint32_t tid;       /* kernel thread id of the caller */
  uint16_t call;      /* mc_trace_call_id */
  uint8_t kind;       /* MC_TRACE_HOST or MC_TRACE_GPU_SPAN */
  uint8_t depth;      /* nesting depth of host spans on the thread (0: outermost) */
  int16_t device;     /* GPU spans: device ordinal */
  uint16_t flags;     /* MC_TRACE_F_* */
} mc_trace_rec;

enum { MC_TRACE_F_GPU = 1 /* a GPU span was asked for this call */ };

/* A call in progress on this thread (on the wrapper's stack). */
typedef struct mc_trace_span {
  mc_trace_rec rec;
  struct mc_trace_span *outer; /* the enclosing span of this thread, or NULL */
  int nvtx;                    /* an NVTX range was pushed */
} mc_trace_span;

/* Start a span of `call` on this thread (clock read, made current); sp->rec is zeroed first. */
void mc_trace_begin(mc_trace_span *sp, mc_trace_call_id call);
/* Mark that the next mgpu* entry point called by this thread is the wrapper's own call. */
void mc_trace_bypass(void);
/* End the span: clock read, record kept (or counted as dropped), outer span made current. */
void mc_trace_end(mc_trace_span *sp);
/* Keep a finished record (GPU spans from trace_gpu.c). 0 if kept, -1 if dropped. */
int mc_trace_keep(const mc_trace_rec *rec);
/* The span in progress on this thread, or NULL. */
mc_trace_span *mc_trace_current(void);
/* Name table: an id for `name` (0 for NULL or when the table is full), and the name of an id. */
uint32_t mc_trace_name_id(const char *name);
const char *mc_trace_name(uint32_t id);
/* Function handles to kernel names: remembered at mgpuModuleGetFunction, looked up at launches. */
void mc_trace_function_name(const void *function, uint32_t name);
uint32_t mc_trace_function_lookup(const void *function);
/* A launch/copy number for the host span and its GPU span. */
uint32_t mc_trace_next_seq(void);
/* Host clock (CLOCK_MONOTONIC, ns). */
uint64_t mc_trace_now(void);
/* Statistics observer (stats.h: mc_stats_observer, set by the constructor when the trace is on):
 * counter `id` moved during this thread's current call. */
void mc_trace_stat(int id);
/* Register the at-exit writer now (done at first use; trace_gpu.c again after the driver is up,
 * so the writer runs before the driver's own exit handler). */
void mc_trace_register_exit(void);

/* ---- GPU spans (trace_gpu.c): called by launch.c and memory.c around the enqueue ---- */

/* Right before a kernel, copy or memset is enqueued on `driver_stream` (the driver's stream the
 * call actually uses; NULL for the NULL stream) of `device` (the timing events are made in its
 * context). No-op unless GPU tracing is on and the thread is in a traced call. */
void mc_trace_gpu_begin(CUstream driver_stream, int device);
/* Right after the enqueue; `result` is the driver's result (nonzero: nothing was enqueued). */
void mc_trace_gpu_end(CUstream driver_stream, int result);
/* One branch on mc_trace_gpu (set only with mc_trace_on): a trace without GPU spans makes no call
 * here either (both functions are no-ops then). */
#define MC_TRACE_GPU_BEGIN(s, device)                                                             \
  do {                                                                                            \
    if (__builtin_expect(mc_trace_gpu, 0)) mc_trace_gpu_begin((s), (device));                     \
  } while (0)
#define MC_TRACE_GPU_END(s, r)                                                                    \
  do {                                                                                            \
    if (__builtin_expect(mc_trace_gpu, 0)) mc_trace_gpu_end((s), (r));                            \
  } while (0)
/* What the trace core (trace.c) asks of the GPU spans: trace_gpu.c registers it at library load
 * (mc_trace_gpu_set_ops), so that trace.c calls nothing of trace_gpu.c (no call cycle). */
typedef struct mc_trace_gpu_ops {
  /* Read back every finished GPU span (waits at most `wait_ms` for unfinished ones, never
   * longer; unfinished ones are counted as dropped). Called by the writer. */
  void (*drain)(int wait_ms);
  /* GPU spans asked for but lost (no event, record failed, unfinished at exit). */
  uint64_t (*dropped)(void);
  /* Read back up to `max` pending GPU spans that have finished (called after synchronize calls). */
  void (*poll)(int max);
  /* GPU spans recorded but not finished yet. */
  uint64_t (*pending)(void);
  /* After fork, in the child: forget the parent's events (called by mc_trace_fork_child). */
  void (*forget)(void);
} mc_trace_gpu_ops;
/* Register them (a static object: kept, not copied). Called once, at library load. */
void mc_trace_gpu_set_ops(const mc_trace_gpu_ops *ops);

/* After fork, in the child (fork.c): an empty trace of its own (its own file, see above), the
 * parent's records and GPU events forgotten, the locks of trace*.c fresh. */
void mc_trace_fork_child(void);

/* ---- NVTX (trace_nvtx.c) ---- */

/* Load the injection named by NVTX_INJECTION64_PATH (constructor); 1 if NVTX ranges are on. */
int mc_trace_nvtx_init(void);
int mc_trace_nvtx_enabled(void);
void mc_trace_nvtx_push(const char *name);
void mc_trace_nvtx_pop(void);

#endif
