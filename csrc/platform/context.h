/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* context.h - devices and contexts for the cached mode.
 *
 * The device a call works on is the calling thread's default device (mgpuSetDefaultDevice, per
 * thread, 0 unless set) at the time of the call; on the HIP backend it is the thread's current HIP
 * device, as in the stock ROCm wrapper (where mgpuSetDefaultDevice is hipSetDevice). Each device's primary context is retained once, on
 * first use, and never released (so nothing is torn down at exit). A context scope makes a device's
 * context current for one mgpu* call and restores whatever the caller had current, so the caller's
 * current context is the same after every call as before it.
 *
 * Locking (context.c): initialisation (driver load, cuInit) and each device's context retain run
 * without a lock, by one thread; threads that need the same result meanwhile wait on a condition
 * variable (g_init_lock / g_dev_lock released). Results are published with release stores;
 * readers load with acquire and take no lock once a device is initialised. The two locks are never
 * held together.
 */
#ifndef MGPU_CACHED_CONTEXT_H
#define MGPU_CACHED_CONTEXT_H

#include "platform/cuda_api.h"
#include "support/config.h"
#include "support/status.h"

/* Devices the library serves: the device count is capped to it, so every valid ordinal is below. */
#define MC_MAX_DEVICES 64

/* The calling thread's default device ordinal. Inline, one load, while it is the process's for
 * every thread (the CUDA backend, and no thread called mgpuSetDefaultDevice): mc_thread_device_
 * fast_ then holds it (context.c publishes it once, from -1; -2 from the first
 * mc_set_thread_device on, for good). */
extern int mc_thread_device_fast_ __attribute__((visibility("hidden")));
int mc_thread_device_slow(void);
static inline int mc_thread_device(void) {
  int d = __atomic_load_n(&mc_thread_device_fast_, __ATOMIC_ACQUIRE);
  return d >= 0 ? d : mc_thread_device_slow();
}
void mc_set_thread_device(int device);
/* mgpuSetDefaultDevice on HIP also makes the device current (hipSetDevice), as the stock ROCm
 * wrapper does; reports a failure in its style. Nothing on CUDA. */
void mc_hip_set_default_device(int device);

/* Load the driver, cuInit and count devices, once. */
mc_status mc_runtime_init(void);

/* Number of devices (0 before mc_runtime_init succeeded). */
int mc_device_count(void);

/* The primary context of `device` (retained on first use). */
mc_status mc_device_context(int device, CUcontext *ctx);

/* CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN of `device`, queried once. */
mc_status mc_device_max_smem_optin(int device, int *bytes);

/* The compute capability of `device` as major * 10 + minor (90 for an H100), queried once; 0 when
 * unknown (no such device, a failure, the HIP backend). */
int mc_device_sm(int device);

typedef struct mc_ctx_scope { /* the caller's, on its stack */
  int pushed;     /* 1 when a context was pushed that mc_ctx_leave must pop */
  int bare;       /* mc_ctx_enter_bare found no context current and pushed none (yet) */
  CUcontext want; /* the context mc_ctx_settle pushes while `bare` */
} mc_ctx_scope;

/* Fork handlers (the library registers them with pthread_atfork): prepare takes the locks, parent
 * releases them; child releases them and forgets the parent's state (retained contexts, device
 * count, the shared memory limits, initialisation), without a driver call, so the child
 * initialises the driver afresh at its first call. */
void mc_context_fork_prepare(void);
void mc_context_fork_parent(void);
void mc_context_fork_child(void);

/* Make `device`'s primary context current unless it already is. A thread that found another
 * context current (or none) at its last look pushes without asking again (cuCtxGetCurrent) for
 * its next CTX_PUSH_RUN enters into the same context: a push of the context already current and
 * its pop change nothing, and are what the stock wrapper does at every call. */
mc_status mc_ctx_enter(int device, mc_ctx_scope *scope);
/* Restore the caller's current context. */
void mc_ctx_leave(mc_ctx_scope *scope);

/* Bare launches (MGPU_CACHED_BARE_LAUNCH=1, issue 21's threads): for a launch on one of the
 * library's own driver streams of `device`, whose stream names its context. Asks which context is
 * current (cuCtxGetCurrent, one thread-local read in the driver): the device's primary context,
 * nothing to do; another one, pushed as mc_ctx_enter does; none, nothing is pushed and
 * scope->bare is set: the driver runs a launch on a stream in the stream's context (CUDA 12 and
 * 13: launch_threads.c's -nocontext probes), and the thread's current context is NULL before and
 * after, as with the stock wrapper's push and pop. Every driver call of the launch other than its
 * cuLaunchKernel on that stream calls mc_ctx_settle first, which pushes the context then (so the
 * function look-up, the graph path and chain replay see it current). A driver that refuses the
 * bare launch (CUDA_ERROR_INVALID_CONTEXT) gets the same launch again, pushed, and no more bare
 * launches (mc_ctx_bare_retry). */
mc_status mc_ctx_enter_bare(int device, mc_ctx_scope *scope);
mc_status mc_ctx_settle(mc_ctx_scope *scope);
/* After a bare launch's driver call gave `result`: 1 when the driver refused it for want of a
 * context (the process makes no bare launch from then on) and the context is now pushed, so the
 * caller makes the same call again; 0 otherwise. */
int mc_ctx_bare_refused_now(mc_ctx_scope *scope); /* the refusal's part (context.c) */
static inline int mc_ctx_bare_retry(mc_ctx_scope *scope, CUresult result) {
  return result == MC_CUDA_ERROR_INVALID_CONTEXT && scope->bare && mc_ctx_bare_refused_now(scope);
}
/* Bare launches on: the switch set and the driver never refused one (inline, two loads). */
extern int mc_ctx_bare_refused_ __attribute__((visibility("hidden")));
static inline int mc_ctx_bare_enabled(void) {
  return mc_config()->bare_launch && !__atomic_load_n(&mc_ctx_bare_refused_, __ATOMIC_RELAXED);
}

/* ---- faults (issue 19 item 5): context resets and sticky errors ----
 *
 * A device's primary context can die under the library: the program (or another library) calls
 * cuDevicePrimaryCtxReset / cudaDeviceReset (the CUcontext pointer stays, every object made in it
 * reports CUDA_ERROR_CONTEXT_IS_DESTROYED, and the pointer works again with a new id once it is
 * retained again), or a kernel faults (a sticky error: CUDA_ERROR_ASSERT, ILLEGAL_ADDRESS,
 * LAUNCH_FAILED, ...: every later call in the context reports it until the context is reset).
 *
 * Detection costs nothing on the hot path: mc_report (the ABI edge's error path) calls
 * mc_ctx_note_result with every driver result it reports; a CONTEXT_IS_DESTROYED marks every
 * retained device suspect, a sticky error marks the device the reporting thread last entered
 * broken. The entry points whose cached answer would skip a driver call that stock makes (module
 * load, stream and event create, allocation) call mc_ctx_verify first: one cuCtxGetId (63 ns on the
 * H100) tells whether the context is still the one the caches were filled in. A context found
 * reset (a new id, or CONTEXT_IS_DESTROYED) is recovered: the hooks registered with
 * mc_ctx_on_reset forget everything of the old context (no driver call on it, never reused), the
 * primary context is retained again, its new id recorded; the call then goes on in the new
 * context. While a device is broken (mc_ctx_broken) every entry point makes the driver call the
 * stock wrapper makes, so it reports the sticky error as stock does. */

/* Register `fn` (called with the device, no lock of this file held, from an ABI entry point:
 * the caller holds no lock of the library) to forget what belonged to a dead context. */
void mc_ctx_on_reset(void (*fn)(int device));

/* A driver result the ABI edge reports (cheap unless it is a context fault). */
void mc_ctx_note_result(int result);

/* The device a driver call about to be reported concerns, when the call entered no context of
 * the library's (a context-less cuMemFree, as stock's): a sticky error it reports marks that
 * device broken, not the one this thread entered last. */
void mc_ctx_note_device(int device);

/* Nonzero while some device is suspect or broken (one relaxed load, inlined: every entry point
 * asks). mc_ctx_trouble_count: the devices with a fault set (context.c; atomic, its writers
 * there). */
extern int mc_ctx_trouble_count __attribute__((visibility("hidden")));
static inline int mc_ctx_trouble(void) {
  return __atomic_load_n(&mc_ctx_trouble_count, __ATOMIC_RELAXED) != 0;
}

/* Is `device`'s context broken by a sticky error (take the stock path)? Inline: one load while no
 * device is in trouble. */
int mc_ctx_broken_now(int device);
static inline int mc_ctx_broken(int device) { return mc_ctx_trouble() && mc_ctx_broken_now(device); }

/* The device's context is still the one the caches were filled in, or recover (see above).
 * Safe in every capture mode; no lock of the library may be held by the caller. */
void mc_ctx_verify(int device);

/* The sticky error of a broken `device` (what every driver call in its context returns, so what
 * stock's calls report), or 0 when it is not broken. */
int mc_ctx_sticky(int device);

/* Is `device`'s context still the one the caches were filled in (one cuCtxGetId)? For the
 * library's own threads (the allocator's reclaimer): 0 after a reset, and nothing is recovered or
 * retained (the program's next call does that; a reset program that never calls again must not
 * get its context back from us). 1 when it cannot tell (no cuCtxGetId, nothing retained yet). */
int mc_ctx_alive(int device);

/* Recover every suspect device (mc_ctx_trouble() set; called from ABI entry points). */
void mc_ctx_check_suspects(void);

#endif
