/* blob.h - GPU binary blobs: recognise the format and derive the length from the blob itself.
 *
 * Callers do not reliably pass a size (LLVM < 18 passes none, the JIT entry point none before
 * LLVM 23), so the length always comes from the blob's own header: a cubin's ELF header and section
 * table, a fatbin container's header, or the terminating NUL of PTX text.
 */
#ifndef MGPU_CACHED_BLOB_H
#define MGPU_CACHED_BLOB_H

#include <stddef.h>

typedef enum {
  MC_BLOB_UNKNOWN = 0, /* not recognised: not cached, handed to the driver as is */
  MC_BLOB_CUBIN,       /* 64-bit ELF */
  MC_BLOB_FATBIN,      /* fatbin container (magic 0xBA55ED50) */
  MC_BLOB_PTX,         /* NUL-terminated text */
  MC_BLOB_CORRUPT,     /* ELF/fatbin magic, but its header puts its tables or its end in
                          unmapped memory (mc_blob_identify only) */
} mc_blob_kind;

/* Largest blob length we accept from a header (larger values mean a corrupt header). */
#define MC_BLOB_MAX_LEN ((size_t)1 << 31)

/* The format by its magic alone (reads at most the first 24 bytes; no length, no table). */
mc_blob_kind mc_blob_format(const void *data);

/* Recognise `data` and compute its length in bytes (0 for MC_BLOB_UNKNOWN). A cubin's length
 * comes from its section and program header tables, which a corrupt header can place anywhere:
 * the tables and the whole length are checked to lie in mapped memory (mincore) before they are
 * read, and a blob that fails is MC_BLOB_UNKNOWN (never cached, never copied). It costs a system
 * call or two, so it runs only when a blob is loaded into the driver, not on cache hits. */
mc_blob_kind mc_blob_identify(const void *data, size_t *len);

const char *mc_blob_kind_name(mc_blob_kind kind);

/* ---- HIP code objects (the HIP backend keeps a copy for loads on other devices) ---- */

/* The length in bytes of a code object the HIP runtime accepted: a clang offload bundle (plain:
 * up to its furthest entry; compressed: the total size its header records from version 2 on),
 * else whatever mc_blob_identify measures (an AMDGPU ELF). Every byte read, and the whole length,
 * is checked to lie in mapped memory first. 0 when the length cannot be known: a compressed
 * bundle of version 1 (its header records no size), a header that does not add up, anything
 * unrecognised. */
size_t mc_blob_code_object_length(const void *data);

#endif
