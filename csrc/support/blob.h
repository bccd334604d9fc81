/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* blob.h - GPU binary blobs: recognise the format and derive the length from the blob itself,
 * reading only bytes known to be readable.
 *
 * Callers do not reliably pass a size (LLVM < 18 passes none, the JIT entry point none before
 * LLVM 23), so the length always comes from the blob's own header: a cubin's ELF header and section
 * table, a fatbin container's header, or the terminating NUL of PTX text.
 */
#ifndef MGPU_CACHED_BLOB_H
#define MGPU_CACHED_BLOB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum {
  MC_BLOB_UNKNOWN = 0, /* not recognised: not cached, handed to the driver as is */
  MC_BLOB_CUBIN,       /* 64-bit ELF */
  MC_BLOB_FATBIN,      /* fatbin container (magic 0xBA55ED50) */
  MC_BLOB_PTX,         /* NUL-terminated text */
  MC_BLOB_CORRUPT,     /* unreadable, or readable memory ends inside its magic, its header, its
                          tables, its length or (text) before its NUL */
} mc_blob_kind;

/* Little-endian fields of a blob's headers, read without alignment (the parsers of blob.c and
 * blob_state.c; the bytes must be known readable). */
static inline uint16_t mc_rd16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t mc_rd32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t mc_rd64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* Largest blob length we accept from a header (larger values mean a corrupt header). */
#define MC_BLOB_MAX_LEN ((size_t)1 << 31)

/* Recognise `data` and compute its length in bytes (0 for MC_BLOB_UNKNOWN / CORRUPT). No byte is
 * read before the page holding it is known readable: each page is probed once by the kernel
 * (process_vm_readv of one byte of it, which fails on unmapped and on PROT_NONE pages alike;
 * mincore where that call is refused, which sees unmapped pages only), starting with the first
 * byte's page. The magic, the header, a cubin's section and program header tables, and the whole
 * length are checked before they are read; PTX text is scanned for its NUL page by page. It costs
 * a system call per probe (one for up to 64 pages), so it runs only when a blob is loaded into
 * the driver, not on cache hits. */
mc_blob_kind mc_blob_identify(const void *data, size_t *len);

/* mc_blob_identify for a blob whose first `readable` bytes are known readable (a read-only segment
 * of a loaded object holds it: rodata.h, mc_rodata_lookup): no probe for a byte among them, so a
 * blob that lies wholly inside costs no system call; bytes beyond are probed as above. */
mc_blob_kind mc_blob_identify_in(const void *data, size_t readable, size_t *len);

/* Whether the blob at `data` is the one whose copy (`len` bytes, `kind`) was taken at load, for a
 * cache hit, without a system call in the common case. The comparison stops at the first
 * difference and reads `data` one page at a time, so only bytes the blob itself says belong to it
 * are read: its header is compared first (its first page was readable when it was loaded; a header
 * that crosses into the next page is probed first), and equal headers give equal lengths; PTX text
 * that differs ends no later than its NUL. */
int mc_blob_same(const unsigned char *copy, size_t len, mc_blob_kind kind, const void *data);

const char *mc_blob_kind_name(mc_blob_kind kind);

/* ---- HIP code objects (the HIP backend keeps a copy for loads on other devices) ---- */

/* The length in bytes of a code object the HIP runtime accepted: a clang offload bundle (plain:
 * up to its furthest entry; compressed: the total size its header records from version 2 on),
 * else whatever mc_blob_identify measures (an AMDGPU ELF). Every byte read, and the whole length,
 * is checked readable first (as in mc_blob_identify). 0 when the length cannot be known: a compressed
 * bundle of version 1 (its header records no size), a header that does not add up, anything
 * unrecognised. */
size_t mc_blob_code_object_length(const void *data);

#endif
