/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* launch.h - kernel launches in the cached mode: the calling thread's default device, its context
 * made current only for the launch, the kernel's per-device function from the module cache, and
 * no per-launch attribute query (the dynamic shared memory limit is raised only when needed). */
#ifndef MGPU_CACHED_LAUNCH_H
#define MGPU_CACHED_LAUNCH_H

#include <stdint.h>

#include "launch/graph_launch.h"
#include "platform/cuda_api.h"
#include "modules/module_cache.h"
#include "support/status.h"

/* A launch's dimensions. The ABI edge converts grid, block and dynamic shared memory to the
 * driver's types as it fills `gd`, and the launch path reads them in place: a copy converted here
 * would be read back as wider words than the ABI stored, and such a load cannot take its bytes
 * from the stores still in flight (a store-forwarding stall, ~6 ns per launch on a Xeon). */
typedef struct mc_launch_dims {
  mc_graph_dims gd;    /* grid, block, dynamic shared memory bytes, as cuLaunchKernel takes them */
  intptr_t cluster[3]; /* all 0: no cluster */
  int cooperative;
} mc_launch_dims;

mc_status mc_launch(mc_function *f, const mc_launch_dims *d, CUstream stream, void **params,
                    void **extra);

#endif
