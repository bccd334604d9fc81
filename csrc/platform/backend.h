/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* backend.h - which GPU runtime serves the mgpu* calls: the CUDA driver or the HIP runtime.
 *
 * driver.c chooses once, on first use (see mc_driver_load): MGPU_CACHED_BACKEND=cuda|hip forces
 * a backend; otherwise CUDA if libcuda.so.1 loads, unless the HIP runtime loads too and CUDA has
 * no device (then HIP); otherwise HIP if libamdhip64.so loads. Whichever is chosen fills the same
 * entry-point table mc_cu (driver.h): the HIP backend (backend_hip.c) with adapters that make the
 * HIP runtime look like the CUDA driver to the caches and pools. The choice is written once under
 * driver.c's pthread_once and never changes, so readers need no lock.
 */
#ifndef MGPU_CACHED_BACKEND_H
#define MGPU_CACHED_BACKEND_H

#include "platform/hip_api.h"

typedef enum { MC_BACKEND_NONE = 0, MC_BACKEND_CUDA = 1, MC_BACKEND_HIP = 2 } mc_backend_id;

/* The chosen backend (MC_BACKEND_NONE until a driver loaded, or if none could be). No loading.
 * Inline, one load: mc_backend_loaded is the backend once its driver loaded, else 0 (driver.c
 * stores it with release after the symbol tables are filled; mc_driver_loaded reads it too). */
extern int mc_backend_loaded __attribute__((visibility("hidden")));
static inline mc_backend_id mc_backend(void) {
  return (mc_backend_id)__atomic_load_n(&mc_backend_loaded, __ATOMIC_ACQUIRE);
}

/* "cuda" or "hip" (the one loaded, else the one MGPU_CACHED_BACKEND asks for), or "none".
 * No loading. */
const char *mc_backend_name(void);

/* Load the driver (once) and say whether the HIP backend was chosen. */
int mc_backend_is_hip(void);

/* ---- the HIP backend (backend_hip.c) ---- */

extern mc_hip_fns mc_hip; /* HIP entry points, for the stock ROCm path; written once at load */

/* dlopen `path`, resolve MC_HIP_SYMBOLS into mc_hip. 0 or -1 with a message in err. Does not
 * touch mc_cu. The handle is returned in *handle (for dlclose when not chosen). */
int mc_hip_open(const char *path, void **handle, char *err, size_t err_size);

/* Number of HIP devices (hipGetDeviceCount), or 0 on any error. Only after mc_hip_open. */
int mc_hip_device_count(void);

/* Fill the CUDA-shaped tables (driver.c passes mc_cu, mc_cu_extra) with adapters over mc_hip. */
struct mc_cuda_fns;
struct mc_cuda_extra_fns;
void mc_hip_install_adapters(struct mc_cuda_fns *cu, struct mc_cuda_extra_fns *extra);

/* The HIP call that stands for a CUDA call name of a status or report ("cuLibraryLoadData" ->
 * "hipModuleLoadData"); a suffix such as "(stream)" is kept. Writes into buf, returns buf, or
 * returns `call` unchanged if there is no mapping. */
const char *mc_hip_call_name(const char *call, char *buf, size_t size);

#endif
