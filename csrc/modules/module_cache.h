/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* module_cache.h - the module cache: each blob loaded once, kernels resolved once per device.
 *
 * Modules are keyed by the blob's address and checked on every hit (length from the blob's own
 * header, then a byte comparison with the copy taken at load), so a different blob at a reused
 * address never gets the old module. A blob of at least 2 KiB that lies in a read-only segment of
 * a loaded object (the executable or a shared library: rodata.h), found so at load or at its last
 * comparison, is not compared while the generation of the set of loaded objects noted then is
 * still current (no dlclose since: a dlopen changes no loaded object's bytes): those bytes cannot
 * have changed; a hit after any dlclose compares and looks again (MGPU_CACHED_HIT_CHECK=full:
 * every hit compares). Such a blob is not copied where there is one device (nor probed for
 * readability at load: the segment is mapped): a hit after a dlclose, with nothing to compare,
 * loads it again.
 * The driver's module API is used, as by the stock wrapper: a blob is loaded with cuModuleLoadData
 * (cuModuleLoadDataEx for the JIT) in the primary context of the calling thread's device, so a
 * load in a global constructor makes that context current first, as the stock wrapper does. A
 * module used on another device is loaded there (from the cache's copy, kept where there is more
 * than one device) at its first need: a launch there, a look-up or mgpuModuleGetGlobal from a
 * thread of that device; one load per device, threads needing it at once wait for it. Kernels
 * are not enumerated or resolved at load: a kernel is found by name with cuModuleGetFunction at
 * its first mgpuModuleGetFunction, on the calling thread's default device, as the stock wrapper's
 * cuModuleGetFunction (a first call of a module of hundreds of kernels makes exactly the stock
 * wrapper's driver calls); later look-ups of the name are lock-free and make no driver call. On
 * another device every kernel found so far is resolved at the first launch there (or at a
 * look-up from a thread of that device), and a kernel found later is resolved at its look-up on
 * every device where the module's kernels were resolved, so a later launch never triggers a lazy
 * kernel load (but for a look-up racing with another device's first launch). mgpuModuleUnload
 * releases a reference; the module stays cached at zero references and is unloaded (every
 * per-device module, each with cuModuleUnload in its device's context) when a different blob
 * replaces it at its address, or when more than MGPU_CACHED_MODULE_CACHE (default 256)
 * unreferenced modules are kept (the least recently released first), so a JIT process that
 * makes many modules does not keep them all loaded.
 * Only modules without module-scope state are cached (blob_state.h): a blob with device globals
 * or host-writable constants is loaded from the driver at every load and unloaded at its last
 * unload, as with the stock library, so every load starts from the image's initial values; a
 * module whose global was handed out by mgpuModuleGetGlobal is not handed out again.
 *
 * Handles: an mc_module* / mc_function* is not a pointer but a generation-tagged handle
 * (slot_table.h): a slot index and the slot's generation. When a module is unloaded from the
 * driver (retired), its private copy of the blob (if any) and its structures are freed and its slots (one
 * for the module, one per kernel) go back to the tables with a new generation, to be reused by
 * later modules. Handles made before then read as stale (MGPU_CACHED_STALE_HANDLE), values the
 * library never made as unknown (MGPU_CACHED_UNKNOWN_HANDLE); neither is ever dereferenced. What
 * stays per retired module is nothing: memory is bounded by the slots of the most modules and
 * kernels ever live at the same time.
 *
 * A thread's repeated loads of a cached module, and their unloads, are answered from that
 * thread's own small cache with no lock and no write to memory another thread uses (LLVM <= 20
 * code loads and unloads around every launch, from every thread); the handles, the hits' checks
 * and the references are the same as through the table (module_cache.c: "Thread caches").
 *
 * Slow driver calls (cuModuleLoadData and the JIT, cuModuleUnload, cuModuleGetFunction, context
 * creation) run without the cache's lock, so a launch or a cache hit
 * never waits behind another thread's load. Two threads loading the same blob at the same address
 * at the same time: the second waits for the first one's load and gets its module (one driver
 * load, one handle). The locking rule and the reclamation are in module_cache.c.
 */
#ifndef MGPU_CACHED_MODULE_CACHE_H
#define MGPU_CACHED_MODULE_CACHE_H

#include <stddef.h>

#include "platform/cuda_api.h"
#include "support/status.h"

typedef struct mc_module mc_module;     /* never defined: the value is a handle */
typedef struct mc_function mc_function; /* never defined: the value is a handle */

/* Load (or find) the module for `blob`. jit=1 for mgpuModuleLoadJIT (PTX, with opt_level). On a
 * JIT failure the driver's error log is copied into log (if given). */
mc_status mc_module_load(const void *blob, int jit, int opt_level, mc_module **out, char *log,
                         size_t log_size);

/* Release one reference taken by mc_module_load. */
mc_status mc_module_unload(mc_module *module);

/* The function `name` of `module` (resolved once per module and name). */
mc_status mc_module_get_function(mc_module *module, const char *name, mc_function **out);

/* For a launch on `device`, whose context is current (or owed: `scope`, when not NULL, is the
 * launch's context scope, settled (context.h, mc_ctx_settle) before any driver call made here):
 * validate `f`, give its CUfunction in that context and make sure its dynamic shared memory limit
 * admits `smem` bytes. *transient is set to
 * 1 when f's module is not cached (module-scope state: blob_state.h): the next load of the blob
 * gives new handles, so nothing per function (graph execs, chains) is worth keeping for it.
 * A NULL `f` gives a NULL CUfunction (transient): the driver reports that launch, as stock's. */
struct mc_ctx_scope;
mc_status mc_function_prepare(mc_function *f, int device, int smem, CUfunction *out,
                               int *transient, struct mc_ctx_scope *scope);

/* A function the cache calls (no lock held) before it unloads modules from the driver: chain
 * replay (chain.c) submits its pending launches, which may use their kernels, first. Set once,
 * by the layer above; NULL: none. */
void mc_module_set_unload_hook(void (*hook)(void));

/* Is `f` a live function handle? No lock, no driver call (chain replay's fast path, launch.c). */
int mc_function_live(const mc_function *f);

/* Fork handlers (the library registers them with pthread_atfork): prepare takes the cache's
 * locks, so that no lock is inherited held; parent releases them; child releases them and resets
 * the cache to a fresh, empty state without any driver call: the parent's driver libraries and
 * functions are forgotten (never used or unloaded in the child; their memory is not freed) and
 * every handle made before the fork reads as stale in the child. */
void mc_module_cache_fork_prepare(void);
void mc_module_cache_fork_parent(void);
void mc_module_cache_fork_child(void);

/* A reset primary context (context.h, mc_ctx_on_reset): forget every cached module (no driver
 * call), so the next load of a blob loads it in the new context; the device's driver modules of
 * modules still held are never used or unloaded again (a later need there loads anew). */
void mc_module_cache_forget_device(int device);

/* ---- ROCm-only export (abi_rocm.c) ---- */
/* The device address and size of the global `name` of `module` on the calling thread's default
 * device (cuModuleGetGlobal on the module loaded there, loading it first if needed; on HIP,
 * hipModuleGetGlobal). */
mc_status mc_module_get_global(mc_module *module, const char *name, void **ptr, size_t *bytes);

#endif
