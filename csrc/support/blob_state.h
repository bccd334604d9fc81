/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* blob_state.h - does a GPU image hold module-scope state? Decided once, from the image, at load.
 *
 * A module with mutable module-scope state (device globals: a cubin's `.nv.global` and
 * `.nv.global.init` sections, PTX `.global` variables; constant banks the host can write through
 * cuModuleGetGlobal: a cubin's `.nv.constant3` symbols, PTX `.const` variables; an AMDGPU code
 * object's writable data) would keep what one user of a cached module wrote for the next one,
 * where a driver load starts from the image's initial values. The module cache (module_cache.h)
 * never caches such a module: every load is a driver load, every last unload a driver unload, as
 * with the stock library.
 *
 * The answer errs one way only: "stateless" is said only of an image that is proven to have no
 * such state; anything not understood (an unknown fatbin entry kind or compression, a compressed
 * entry whose decompressor library cannot be loaded, an ELF without section names, PTX with
 * preprocessor directives) is "stateful", which costs a driver load per load, never a result.
 *
 * What counts as state, per format:
 * - cubin (ELF, EM_CUDA): any section whose name begins with `.nv.global`; any writable section
 *   other than per-block shared memory (`.nv.shared.*`) and per-thread local memory
 *   (`.nv.local.*`); any defined data symbol (STT_OBJECT, STT_COMMON, STT_TLS), which is what
 *   cuModuleGetGlobal can hand out (a `__constant__` lives in `.nv.constant3`, a printf format in
 *   `.nv.global.init`).
 * - AMDGPU code object (ELF, EM_AMDGPU): any writable section other than the loader's `.dynamic`,
 *   `.got` and `.relro_padding`; any defined data symbol other than a kernel descriptor (a
 *   symbol `K.kd` in a read-only section).
 * - PTX text: a `#` anywhere (the driver runs a preprocessor); any `.global`, `.const`, `.tex`,
 *   `.texref`, `.surfref` or `.samplerref` directive token (a token that begins a word, so
 *   `ld.global` is not one) that does not follow `.ptr` (a kernel parameter's attribute); string
 *   literals (`.global .b8 $str[...]`) count: they are technically writable.
 * - fatbin: every entry must be a cubin or PTX, uncompressed or compressed with zstd or LZ4 (the
 *   system's libzstd.so.1 / liblz4.so.1, loaded on first need) to exactly the size its header
 *   records, and stateless; an entry of another kind, an unknown compression, a decompressor
 *   that is missing or disagrees with the header: stateful.
 * ELF of any other machine: stateful.
 */
#ifndef MGPU_CACHED_BLOB_STATE_H
#define MGPU_CACHED_BLOB_STATE_H

#include <pthread.h>
#include <stddef.h>

#include "support/blob.h"

/* 1 if the image (`len` readable bytes of `kind`, as mc_blob_identify measured them) has or may
 * have module-scope state, 0 if it provably has none. No system call except the first
 * decompressor load. */
int mc_blob_stateful(const void *data, size_t len, mc_blob_kind kind);

/* The same for a load on a device of compute capability `sm` (major * 10 + minor; 0: unknown):
 * a fatbin holding an ELF entry built for exactly that architecture is loaded from such an entry
 * (the driver prefers a matching cubin to compiling PTX), so only those entries are classified,
 * and a compressed PTX entry beside them is neither decompressed nor its decompressor loaded
 * (MLIR's fatbins: an sm_XX cubin and zstd-compressed PTX; the decompressor's dlopen cost about
 * as much as the rest of the first call's extra work). The caller passes 0 where the driver may
 * compile the PTX anyway (CUDA_FORCE_PTX_JIT): every entry is read, as mc_blob_stateful. */
int mc_blob_stateful_on(const void *data, size_t len, mc_blob_kind kind, int sm);

/* 1 when the verdict for this image may depend on the device's architecture (a fatbin with a
 * compressed entry, which mc_blob_stateful_on may skip): the caller then passes it. No system
 * call. */
int mc_blob_state_wants_sm(const void *data, size_t len, mc_blob_kind kind);

/* mc_blob_stateful of an image of at least MC_BLOB_STATE_ASYNC_MIN bytes, run on a helper thread
 * while the caller loads the image into the driver (the scan of a large fatbin, decompression of
 * its PTX included, costs about a third of a cuModuleLoadData of it), so that a module's first
 * call waits for the longer of the two only. The helper only computes: the decompressors its
 * entries need are loaded by mc_blob_state_start itself, in the calling thread, before the helper
 * starts, so the helper never needs the dynamic loader (whose lock the caller may hold: a module
 * loaded in a global constructor of a library being dlopened); it takes no lock the caller holds
 * while it waits in mc_blob_state_finish, and blocks every asynchronous signal. Smaller images,
 * images whose scan reads ELF section headers only (a cubin; a fatbin whose entries read are
 * uncompressed ELF), or when no thread can be made, are scanned at mc_blob_state_finish, in the
 * caller. The image's bytes must stay as they are until then (the caller is loading them). */
#define MC_BLOB_STATE_ASYNC_MIN ((size_t)256 << 10)

typedef struct mc_blob_state_scan {
  const void *data;   /* the image (len readable bytes of kind); immutable */
  size_t len;
  mc_blob_kind kind;
  int sm;             /* the architecture whose entries are read (resolved at start: 0, all) */
  void *copy;         /* the caller's buffer of len bytes that receives the image too, or NULL:
                         written by the helper (else by finish), the caller's after finish */
  int copy_always;    /* copy a stateful image too (else only a stateless one); immutable */
  int copied;         /* the copy was made; read by the caller after finish */
  int started;        /* a helper thread runs the scan (else finish runs it) */
  int result;         /* written by the helper, read after the join */
  pthread_t thread;   /* the helper (while started); joined by mc_blob_state_finish */
} mc_blob_state_scan;

/* sm: as for mc_blob_stateful_on. copy: NULL, or len bytes the image is also copied into, after
 * the scan, when it is stateless or copy_always (a module cache's copy of a large image, made
 * beside the driver load as the scan is; scan->copied tells after finish). */
void mc_blob_state_start(mc_blob_state_scan *scan, const void *data, size_t len,
                         mc_blob_kind kind, int sm, void *copy, int copy_always);
/* The verdict of mc_blob_stateful_on (the helper joined). Call exactly once per start. */
int mc_blob_state_finish(mc_blob_state_scan *scan);

#endif
