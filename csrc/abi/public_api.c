/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* public_api.c - the exported mgpu_cached_* functions of include/mgpu_cached.h that reach into the
 * driver, the caches and the pools (the statistics interface lives beside the counters in stats.c,
 * the configuration's in config.c, the trace's in trace.c). Edge layer: thin, reports in the stock
 * style. */
#include "include/mgpu_cached.h"

#include "launch/chain.h"
#include "memory/allocator.h"
#include "platform/backend.h"
#include "platform/driver.h"
#include "streams/pool.h"
#include "support/config.h"
#include "support/report.h"

#define MC_EXPORT __attribute__((visibility("default")))

MC_EXPORT void *mgpu_cached_driver_handle(void *handle) {
  if (mc_disabled()) return handle; /* stock: handles are the driver's own */
  mc_status st = mc_chain_flush(); /* the program may use the driver stream directly from now */
  if (MC_FAILED(st)) mc_report("mgpu_cached_driver_handle", st, NULL);
  return mc_pool_driver_handle(handle);
}

MC_EXPORT const char *mgpu_cached_backend(void) {
  mc_driver_load(); /* the choice is made when the driver is loaded */
  return mc_backend_name();
}

MC_EXPORT const char *mgpu_cached_driver_path(void) { return mc_driver_path(); }

MC_EXPORT const char *mgpu_cached_driver_error(void) {
  mc_driver_load();
  return mc_driver_error();
}

MC_EXPORT uint64_t mgpu_cached_allocator_release(void) {
  uint64_t n = 0;
  mc_report("mgpu_cached_allocator_release", mc_alloc_release_all(&n), NULL);
  return n;
}
