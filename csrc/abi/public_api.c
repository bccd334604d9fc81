/* public_api.c - the exported mgpu_cached_* functions of include/mgpu_cached.h that reach into the
 * caches and pools (the statistics interface lives beside the counters in stats.c). Edge layer:
 * thin, reports in the stock style. */
#include "include/mgpu_cached.h"

#include "launch/chain.h"
#include "support/config.h"
#include "support/report.h"
#include "streams/pool.h"

#define MC_EXPORT __attribute__((visibility("default")))

MC_EXPORT void *mgpu_cached_driver_handle(void *handle) {
  if (mc_disabled()) return handle; /* stock: handles are the driver's own */
  mc_status st = mc_chain_flush(); /* the program may use the driver stream directly from now */
  if (MC_FAILED(st)) mc_report("mgpu_cached_driver_handle", st, NULL);
  return mc_pool_driver_handle(handle);
}
