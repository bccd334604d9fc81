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

#include "cuda_api.h"
#include "status.h"

/* Devices the library serves: the device count is capped to it, so every valid ordinal is below. */
#define MC_MAX_DEVICES 64

/* The calling thread's default device ordinal. */
int mc_thread_device(void);
void mc_set_thread_device(int device);

/* Load the driver, cuInit and count devices, once. */
mc_status mc_runtime_init(void);

/* Number of devices (0 before mc_runtime_init succeeded). */
int mc_device_count(void);

/* The primary context of `device` (retained on first use). */
mc_status mc_device_context(int device, CUcontext *ctx);

/* CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN of `device`, queried once. */
mc_status mc_device_max_smem_optin(int device, int *bytes);

typedef struct mc_ctx_scope {
  int pushed; /* 1 when mc_ctx_enter pushed a context that mc_ctx_leave must pop */
} mc_ctx_scope;

/* Fork handlers (the library registers them with pthread_atfork): prepare takes the locks, parent
 * releases them; child releases them and forgets the parent's state (retained contexts, device
 * count, the shared memory limits, initialisation), without a driver call, so the child
 * initialises the driver afresh at its first call. */
void mc_context_fork_prepare(void);
void mc_context_fork_parent(void);
void mc_context_fork_child(void);

/* Make `device`'s primary context current unless it already is. */
mc_status mc_ctx_enter(int device, mc_ctx_scope *scope);
/* Restore the caller's current context. */
void mc_ctx_leave(mc_ctx_scope *scope);

#endif
