/* public_api.c - the exported mgpu_cached_* functions of include/mgpu_cached.h that reach into the
 * caches and pools (the statistics interface lives beside the counters in stats.c). Edge layer:
 * thin, reports in the stock style. */
#include "include/mgpu_cached.h"

#include "config.h"
#include "pool.h"

#define MC_EXPORT __attribute__((visibility("default")))

MC_EXPORT void *mgpu_cached_driver_handle(void *handle) {
  if (mc_disabled()) return handle; /* stock: handles are the driver's own */
  return mc_pool_driver_handle(handle);
}
