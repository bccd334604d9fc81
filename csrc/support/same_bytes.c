/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* same_bytes.c - byte-range equality and aligned copies (see same_bytes.h). */
#include "support/same_bytes.h"

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
  if (!(b & (1u << 16)) || !(b & (1u << 30))) return 0; /* AVX512F, AVX512BW */
  if (!__get_cpuid_count(7, 1, &a, &b, &c, &d)) return 0;
  return (a & (1u << 4)) != 0; /* AVX-VNNI: 512-bit loads keep the clock (glibc's rule) */
}

/* The n bytes (n < 64) that a masked load of a 64-byte vector reads: masked-off bytes are neither
 * read nor faulted on. */
__attribute__((target("avx512f,avx512bw"))) static inline __mmask64 first_bytes(size_t n) {
  return (__mmask64)(n ? ~0ull >> (64 - n) : 0);
}

/* a and b equal over n bytes, b's loads aligned after a masked head (so a's too when both sit at
 * the same offset within 64 bytes). No early exit: a hit's ranges are equal. */
__attribute__((target("avx512f,avx512bw"))) static int same_512(const unsigned char *a,
                                                                const unsigned char *b, size_t n) {
  __m512i acc = _mm512_setzero_si512();
  size_t head = (size_t)(-(uintptr_t)b & (COPY_ALIGN - 1));
  if (head > n) head = n;
  if (head) {
    __mmask64 k = first_bytes(head);
    acc = _mm512_xor_si512(_mm512_maskz_loadu_epi8(k, a), _mm512_maskz_loadu_epi8(k, b));
    a += head;
    b += head;
    n -= head;
  }
  for (; n >= 256; a += 256, b += 256, n -= 256) {
    __m512i x0 = _mm512_xor_si512(_mm512_loadu_si512(a), _mm512_load_si512(b));
    __m512i x1 = _mm512_xor_si512(_mm512_loadu_si512(a + 64), _mm512_load_si512(b + 64));
    __m512i x2 = _mm512_xor_si512(_mm512_loadu_si512(a + 128), _mm512_load_si512(b + 128));
    __m512i x3 = _mm512_xor_si512(_mm512_loadu_si512(a + 192), _mm512_load_si512(b + 192));
    acc = _mm512_or_si512(acc, _mm512_or_si512(_mm512_or_si512(x0, x1), _mm512_or_si512(x2, x3)));
  }
  for (; n >= 64; a += 64, b += 64, n -= 64)
    acc = _mm512_or_si512(acc, _mm512_xor_si512(_mm512_loadu_si512(a), _mm512_load_si512(b)));
  if (n) {
    __mmask64 k = first_bytes(n);
    acc = _mm512_or_si512(acc, _mm512_xor_si512(_mm512_maskz_loadu_epi8(k, a),
                                                 _mm512_maskz_loadu_epi8(k, b)));
  }
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
