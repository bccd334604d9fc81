/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* launch.h - kernel launches in the cached mode: the calling thread's default device, its context
 * made current only for the launch, the kernel's per-device function from the module cache, and
 * no per-launch attribute query (the dynamic shared memory limit is raised only when needed). */
#ifndef MGPU_CACHED_LAUNCH_H
#define MGPU_CACHED_LAUNCH_H

#include <stdint.h>

#include "platform/cuda_api.h"
#include "modules/module_cache.h"
#include "support/status.h"

typedef struct mc_launch_dims {
  intptr_t grid[3], block[3], cluster[3]; /* cluster all 0: no cluster */
  int32_t smem;
  int cooperative;
} mc_launch_dims;

mc_status mc_launch(mc_function *f, const mc_launch_dims *d, CUstream stream, void **params,
                    void **extra);

#endif
