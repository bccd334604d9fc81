/* module_cache.h - the module cache: each blob loaded once, kernels resolved once per device.
 *
 * Modules are keyed by the blob's address and checked on every hit (length from the blob's own
 * header, then a byte comparison with the copy taken at load), so a different blob at a reused
 * address never gets the old module. A blob is loaded with cuLibraryLoadData, which needs no
 * context: loading works in a global constructor, before main and before any
 * mgpuSetDefaultDevice. Each kernel is resolved (cuKernelGetFunction, which loads it into the
 * context) for the loading thread's default device at load, and for any other device on the
 * first launch there, all kernels of the module at once, so a later launch never triggers a lazy
 * load. mgpuModuleUnload releases a reference; the module stays cached at zero references and is
 * unloaded when a different blob replaces it at its address, or when more than
 * MGPU_CACHED_MODULE_CACHE (default 256) unreferenced modules are kept (the least recently
 * released first), so a JIT process that makes many modules does not keep them all loaded.
 *
 * Handles (mc_module*, mc_function*) are never freed, so a stale handle is detected, not a crash.
 * The locking rule is in module_cache.c.
 */
#ifndef MGPU_CACHED_MODULE_CACHE_H
#define MGPU_CACHED_MODULE_CACHE_H

#include <stddef.h>

#include "cuda_api.h"
#include "status.h"

typedef struct mc_module mc_module;
typedef struct mc_function mc_function;

/* Load (or find) the module for `blob`. jit=1 for mgpuModuleLoadJIT (PTX, with opt_level). On a
 * JIT failure the driver's error log is copied into log (if given). */
mc_status mc_module_load(const void *blob, int jit, int opt_level, mc_module **out, char *log,
                         size_t log_size);

/* Release one reference taken by mc_module_load. */
mc_status mc_module_unload(mc_module *module);

/* The function `name` of `module` (resolved once per module and name). */
mc_status mc_module_get_function(mc_module *module, const char *name, mc_function **out);

/* For a launch on `device`, whose context is current: validate `f`, give its CUfunction in that
 * context and make sure its dynamic shared memory limit admits `smem` bytes. */
mc_status mc_function_prepare(mc_function *f, int device, int smem, CUfunction *out);

/* ---- ROCm-only export (abi_rocm.c) ---- */
/* The device address and size of the global `name` of `module` on the calling thread's default
 * device (cuLibraryGetGlobal; on HIP, hipModuleGetGlobal of that device's module). */
mc_status mc_module_get_global(mc_module *module, const char *name, void **ptr, size_t *bytes);

#endif
