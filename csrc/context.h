/* context.h - devices and contexts for the cached mode.
 *
 * The device a call works on is the calling thread's default device (mgpuSetDefaultDevice, per
 * thread, 0 unless set) at the time of the call; on the HIP backend it is the thread's current HIP
 * device, as in the stock ROCm wrapper (where mgpuSetDefaultDevice is hipSetDevice). Each device's primary context is retained once, on
 * first use, and never released (so nothing is torn down at exit). A context scope makes a device's
 * context current for one mgpu* call and restores whatever the caller had current, so the caller's
 * current context is the same after every call as before it.
 *
 * Locking: the device table is filled under g_dev_lock (context.c) and published with release
 * stores; readers load with acquire and take no lock once a device is initialised.
 */
#ifndef MGPU_CACHED_CONTEXT_H
#define MGPU_CACHED_CONTEXT_H

#include "cuda_api.h"
#include "status.h"

/* The calling thread's default device ordinal. */
int mc_thread_device(void);
void mc_set_thread_device(int device);

/* Load the driver, cuInit and count devices, once. */
mc_status mc_runtime_init(void);

/* Number of devices (0 before mc_runtime_init succeeded). */
int mc_device_count(void);

/* The primary context of `device` (retained on first use), and its CUdevice. */
mc_status mc_device_context(int device, CUcontext *ctx);

/* CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN of `device`, queried once. */
mc_status mc_device_max_smem_optin(int device, int *bytes);

typedef struct mc_ctx_scope {
  int pushed; /* 1 when mc_ctx_enter pushed a context that mc_ctx_leave must pop */
} mc_ctx_scope;

/* Make `device`'s primary context current unless it already is. */
mc_status mc_ctx_enter(int device, mc_ctx_scope *scope);
/* Restore the caller's current context. */
void mc_ctx_leave(mc_ctx_scope *scope);

#endif
