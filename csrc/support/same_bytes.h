/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* same_bytes.h - whether two byte ranges are equal, read at the widest width the CPU runs without
 * slowing down, and copies laid out so both ranges are read aligned.
 *
 * A cache hit on a blob the library cannot prove unchanged (on the heap, in JIT memory) compares
 * every byte of it with the copy taken at load (module_cache.c, blob.c's mc_blob_same): for LLVM
 * <= 20 code that is once per launch. memcmp reads 32 bytes of each range at a time and stops at
 * the first difference; an equality test needs neither the order nor the place. With AVX-512 the
 * test reads 64 bytes of each range per load, aligned on both sides when the copy sits at the
 * blob's offset within 64 bytes (mc_copy_alloc_like), and stops only at the end: about half
 * memcmp's time for a 3.7 KB blob. It is used only where 512-bit loads do not lower the CPU's
 * clock (the rule glibc applies to its own string functions: AVX-512 with AVX-VNNI, the OS saving
 * the registers); elsewhere, and on other architectures, it is memcmp. Every load lies inside the
 * two ranges (none is masked, so none can fault or need the CPU's help near an unmapped page). */
#ifndef MGPU_CACHED_SAME_BYTES_H
#define MGPU_CACHED_SAME_BYTES_H

#include <stddef.h>

/* 1 if the n bytes at a and at b are equal (all 2n bytes must be readable), else 0. */
int mc_same_bytes(const void *a, const void *b, size_t n);

/* Room for a copy of the n bytes at `like` (not copied), at the same offset within 64 bytes as
 * `like`; NULL without memory. Freed with mc_copy_free only. */
unsigned char *mc_copy_alloc_like(const void *like, size_t n);
void mc_copy_free(unsigned char *copy); /* NULL: nothing */

/* Which comparison mc_same_bytes uses here: "avx512" or "memcmp" (MGPU_CACHED_VERBOSE names it
 * when a blob is copied for its hits; tests). */
const char *mc_same_bytes_kind(void);

#endif
