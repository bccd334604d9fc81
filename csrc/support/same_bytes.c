/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* same_bytes.c - byte-range equality and aligned copies (see same_bytes.h). */
#include "support/same_bytes.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define COPY_ALIGN 64 /* a 512-bit load's width */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(MC_SAME_BYTES_MEMCMP_ONLY) /* (tests build the memcmp path this way) */
#include <cpuid.h>
#include <immintrin.h>
#define SAME_WIDE 1

/* 1 where 512-bit loads are available and do not lower the clock (same_bytes.h). */
static int wide_supported(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(1, 0, &a, &b, &c, &d) || !(c & (1u << 27))) return 0; /* OSXSAVE */
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & 0xE6) != 0xE6) return 0; /* the OS saves XMM, YMM, opmask and ZMM state */
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
  if (!(b & (1u << 16))) return 0; /* AVX512F */
  if (!__get_cpuid_count(7, 1, &a, &b, &c, &d)) return 0;
  return (a & (1u << 4)) != 0; /* AVX-VNNI: 512-bit loads keep the clock (glibc's rule) */
}

/* The smaller of two offsets, without a branch (a conditional move). */
static inline ptrdiff_t lesser(ptrdiff_t x, ptrdiff_t y) { return x < y ? x : y; }

/* a and b equal over n >= 64 bytes. One unaligned vector first, then b's loads aligned (a's too
 * when both sit at the same offset within 64 bytes), four vectors a step, and the last 0-255
 * bytes as four vectors that stop at the range's last 64 bytes (overlapping what was compared
 * already): every load lies inside the ranges, none is masked, and the only data-dependent
 * branch is the loop's, so a comparison made among other work (a cache hit between launches)
 * pays at most one misprediction. No early exit: a hit's ranges are equal. */
__attribute__((target("avx512f"))) static int same_512(const unsigned char *a,
                                                      const unsigned char *b, size_t n) {
  __m512i acc = _mm512_xor_si512(_mm512_loadu_si512(a), _mm512_loadu_si512(b));
  size_t step = ((-(uintptr_t)b - 1) & 63) + 1; /* to b's next 64-byte boundary: 1..64 */
  a += step;
  b += step;
  n -= step;
  for (; n >= 256; a += 256, b += 256, n -= 256) {
    __m512i x0 = _mm512_xor_si512(_mm512_loadu_si512(a), _mm512_load_si512(b));
    __m512i x1 = _mm512_xor_si512(_mm512_loadu_si512(a + 64), _mm512_load_si512(b + 64));
    __m512i x2 = _mm512_xor_si512(_mm512_loadu_si512(a + 128), _mm512_load_si512(b + 128));
    __m512i x3 = _mm512_xor_si512(_mm512_loadu_si512(a + 192), _mm512_load_si512(b + 192));
    acc = _mm512_or_si512(acc, _mm512_or_si512(_mm512_or_si512(x0, x1), _mm512_or_si512(x2, x3)));
  }
  /* the rest, n < 256: vector i at offset min(64i, n - 64) (n - 64 >= -64: the range's last 64
   * bytes, which begin at or after its start since the whole range holds 64 or more) */
  ptrdiff_t last = (ptrdiff_t)n - 64;
  ptrdiff_t o0 = lesser(0, last), o1 = lesser(64, last), o2 = lesser(128, last),
            o3 = lesser(192, last);
  __m512i y0 = _mm512_xor_si512(_mm512_loadu_si512(a + o0), _mm512_loadu_si512(b + o0));
  __m512i y1 = _mm512_xor_si512(_mm512_loadu_si512(a + o1), _mm512_loadu_si512(b + o1));
  __m512i y2 = _mm512_xor_si512(_mm512_loadu_si512(a + o2), _mm512_loadu_si512(b + o2));
  __m512i y3 = _mm512_xor_si512(_mm512_loadu_si512(a + o3), _mm512_loadu_si512(b + o3));
  acc = _mm512_or_si512(acc, _mm512_or_si512(_mm512_or_si512(y0, y1), _mm512_or_si512(y2, y3)));
  return _mm512_test_epi64_mask(acc, acc) == 0;
}
#else
#define SAME_WIDE 0
static int wide_supported(void) { return 0; }
#endif

static int g_wide; /* atomic: 0 not yet asked, 1 memcmp, 2 same_512 (racing first calls agree) */

static int wide(void) {
  int w = __atomic_load_n(&g_wide, __ATOMIC_RELAXED);
  if (__builtin_expect(w == 0, 0)) {
    w = wide_supported() ? 2 : 1;
    __atomic_store_n(&g_wide, w, __ATOMIC_RELAXED);
  }
  return w == 2;
}

int mc_same_bytes(const void *a, const void *b, size_t n) {
#if SAME_WIDE
  if (n >= COPY_ALIGN && wide()) return same_512(a, b, n);
#endif
  return memcmp(a, b, n) == 0;
}

const char *mc_same_bytes_kind(void) { return SAME_WIDE && wide() ? "avx512" : "memcmp"; }

unsigned char *mc_copy_alloc_like(const void *like, size_t n) {
  size_t off = (uintptr_t)like & (COPY_ALIGN - 1);
  if (n > SIZE_MAX - 2 * COPY_ALIGN) return NULL;
  size_t total = (off + n + COPY_ALIGN - 1) & ~(size_t)(COPY_ALIGN - 1);
  unsigned char *base = aligned_alloc(COPY_ALIGN, total ? total : COPY_ALIGN);
  return base ? base + off : NULL;
}

void mc_copy_free(unsigned char *copy) {
  if (copy) free((void *)((uintptr_t)copy & ~(uintptr_t)(COPY_ALIGN - 1)));
}
