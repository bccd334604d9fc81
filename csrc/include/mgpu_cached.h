/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* mgpu_cached.h - the small C interface libmgpu_cached.so exports besides the mgpu* ABI.
 *
 * The Python package reads it through cffi; C programs may call it too. Statistics are counters
 * of this process; names are stable identifiers (see `mgpu-cached stats`).
 */
#ifndef MGPU_CACHED_H
#define MGPU_CACHED_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Library version, e.g. "0.1.0". */
const char *mgpu_cached_version(void);

/* 1 when caching is on, 0 when MGPU_CACHED_DISABLE makes every call behave like the stock wrapper. */
int mgpu_cached_enabled(void);

/* The backend in use: "cuda" or "hip" ("none" while no driver could be loaded). */
const char *mgpu_cached_backend(void);

/* The driver library path, and NULL or the reason it could not be loaded (this loads it). */
const char *mgpu_cached_driver_path(void);
const char *mgpu_cached_driver_error(void);

/* Statistics: count, name and description of counter i, and a snapshot of up to n values. */
int mgpu_cached_stats_count(void);
const char *mgpu_cached_stats_name(int i);
const char *mgpu_cached_stats_description(int i);
int mgpu_cached_stats_read(uint64_t *values, int n);

/* Give every block the caching allocator keeps for reuse back to the driver (waiting for the work
 * that may still use it); returns how many blocks were released. */
uint64_t mgpu_cached_allocator_release(void);

/* The driver object (CUstream / CUevent, or hipStream_t / hipEvent_t) behind a stream or event
 * handle from mgpuStreamCreate / mgpuEventCreate, for passing to the driver directly. The handle
 * is pinned from then on: it keeps this driver object until it is destroyed. Handles the library
 * did not make are returned unchanged; NULL for a destroyed handle. */
void *mgpu_cached_driver_handle(void *handle);

/* Configuration: the environment variables the library reads (all of them, each parsed once, at
 * the first call). For variable i: its name, its default and the value in use as text, a one-line
 * description, and 1 when it was set to a valid value (an explicit request). */
int mgpu_cached_config_count(void);
const char *mgpu_cached_config_name(int i);
const char *mgpu_cached_config_default(int i);
const char *mgpu_cached_config_value(int i);
const char *mgpu_cached_config_help(int i);
int mgpu_cached_config_explicit(int i);

/* With MGPU_CACHED_TRACE set: write the trace file now (it is written at exit anyway); 0, or -1
 * when tracing is off. */
int mgpu_cached_trace_write(void);

#ifdef __cplusplus
}
#endif
#endif
