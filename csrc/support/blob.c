/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* blob.c - blob format recognition and length derivation (see blob.h). */
#include "support/blob.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "support/same_bytes.h"

#define FATBIN_MAGIC 0xBA55ED50u
#define PROBE_PAGES 64 /* pages probed by one system call */


static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

static uintptr_t page_size(void) {
  static long page; /* racing first calls store the same value: atomic */
  long p = __atomic_load_n(&page, __ATOMIC_RELAXED);
  if (!p) {
    p = sysconf(_SC_PAGESIZE);
    __atomic_store_n(&page, p, __ATOMIC_RELAXED);
  }
  return p > 0 ? (uintptr_t)p : 4096;
}

static uintptr_t page_of(uintptr_t a) { return a & ~(page_size() - 1); }

static int g_no_vm_readv; /* process_vm_readv refused here (seccomp, old kernel): use mincore */

/* How many of the n pages from `first` (page-aligned) are readable, counted from the first. */
static size_t readable_pages(uintptr_t first, size_t n) {
  uintptr_t pg = page_size();
  if (n > PROBE_PAGES) n = PROBE_PAGES;
  if (!__atomic_load_n(&g_no_vm_readv, __ATOMIC_RELAXED)) {
    /* One byte of each page, read by the kernel: a page that faults ends the transfer there
     * (partial transfers stop at iovec granularity). */
    char sink[PROBE_PAGES];
    struct iovec local = {sink, n}, remote[PROBE_PAGES];
    for (size_t i = 0; i < n; ++i) {
      remote[i].iov_base = (void *)(first + i * pg);
      remote[i].iov_len = 1;
    }
    ssize_t got = process_vm_readv(getpid(), &local, 1, remote, n, 0);
    if (got >= 0) return (size_t)got;
    if (errno == EFAULT) return 0;
    __atomic_store_n(&g_no_vm_readv, 1, __ATOMIC_RELAXED); /* ENOSYS, EPERM: not available */
  }
  unsigned char vec[PROBE_PAGES];
  size_t ok = 0;
  while (ok < n && mincore((void *)(first + ok * pg), pg, vec) == 0) ok++;
  return ok;
}

/* Bytes known readable without a probe: [lo, hi) (a read-only segment of a loaded object, for
 * mc_blob_identify_in); lo == hi: none. */
typedef struct known_span {
  uintptr_t lo, hi;
} known_span;

static int known(const known_span *k, uintptr_t a, size_t n) {
  return k && a >= k->lo && a <= k->hi && n <= k->hi - a;
}

/* 1 if every byte of [p, p + n) is readable (k: bytes known readable, or NULL). */
static int range_readable_k(const void *p, size_t n, const known_span *k) {
  uintptr_t a = (uintptr_t)p, end = a + n;
  if (end < a) return 0;
  if (n == 0 || known(k, a, n)) return 1;
  uintptr_t pg = page_size();
  for (uintptr_t cur = page_of(a); cur < end;) {
    size_t want = (size_t)((page_of(end - 1) - cur) / pg) + 1;
    size_t asked = want < PROBE_PAGES ? want : PROBE_PAGES;
    size_t got = readable_pages(cur, asked);
    if (got < asked) return 0;
    cur += got * pg;
  }
  return 1;
}

static int range_readable(const void *p, size_t n) { return range_readable_k(p, n, NULL); }

/* How many of the first `want` bytes at p are readable (p's own page included). */
static size_t readable_prefix(const unsigned char *p, size_t want, const known_span *k) {
  uintptr_t a = (uintptr_t)p, pg = page_size();
  if (known(k, a, want)) return want;
  size_t have = 0;
  while (have < want) {
    uintptr_t page = page_of(a + have);
    if (!readable_pages(page, 1)) break;
    have = (size_t)(page + pg - a);
  }
  return have < want ? have : want;
}

/* Whether the n readable bytes at p are a proper prefix of `magic` (m bytes): readable memory
 * ends inside it. */
static int truncated_magic(const unsigned char *p, size_t n, const void *magic, size_t m) {
  return n < m && memcmp(p, magic, n) == 0;
}

/* PTX: the length up to and including the NUL, scanning one page at a time; 0 if readable memory
 * (or MC_BLOB_MAX_LEN) ends first. p's page is known readable. */
static size_t text_length(const unsigned char *p, const known_span *k) {
  uintptr_t a = (uintptr_t)p, pg = page_size();
  uintptr_t cur = a, limit = page_of(a) + pg; /* readable up to here */
  if (known(k, a, 1) && page_of(k->hi) > limit) limit = page_of(k->hi); /* known: no probe */
  for (;;) {
    const unsigned char *nul = memchr((const void *)cur, 0, limit - cur);
    if (nul) return (size_t)(nul - p) + 1;
    if (limit - a > MC_BLOB_MAX_LEN) return 0;
    size_t got = readable_pages(limit, PROBE_PAGES);
    if (!got) return 0;
    cur = limit;
    limit += got * pg;
  }
}

/* 64-bit little-endian ELF (64 header bytes readable): the file ends at the furthest of the
 * section header table, the program header table and every section's contents. */
static size_t elf64_length(const unsigned char *p, int *corrupt, const known_span *k) {
  if (p[4] != 2 /* ELFCLASS64 */ || p[5] != 1 /* little endian */) return 0;
  uint64_t phoff = mc_rd64(p + 0x20), shoff = mc_rd64(p + 0x28);
  uint16_t ehsize = mc_rd16(p + 0x34), phentsize = mc_rd16(p + 0x36), phnum = mc_rd16(p + 0x38);
  uint16_t shentsize = mc_rd16(p + 0x3A), shnum = mc_rd16(p + 0x3C);
  if (ehsize < 64 || phoff > MC_BLOB_MAX_LEN || shoff > MC_BLOB_MAX_LEN) return 0;
  if ((shnum && shentsize < 64) || (phnum && phentsize < 56)) return 0;
  size_t end = ehsize;
  if (phnum) end = max_sz(end, (size_t)phoff + (size_t)phnum * phentsize);
  if (shnum) end = max_sz(end, (size_t)shoff + (size_t)shnum * shentsize);
  if (!range_readable_k(p, end, k)) { /* the tables are not where the header says */
    *corrupt = 1;
    return 0;
  }
  for (uint16_t i = 0; i < shnum; ++i) {
    const unsigned char *sh = p + shoff + (size_t)i * shentsize;
    uint32_t type = mc_rd32(sh + 4);
    uint64_t off = mc_rd64(sh + 0x18), size = mc_rd64(sh + 0x20);
    if (type == 8 /* SHT_NOBITS */) continue;
    if (off > MC_BLOB_MAX_LEN || size > MC_BLOB_MAX_LEN) return 0;
    end = max_sz(end, (size_t)(off + size));
  }
  for (uint16_t i = 0; i < phnum; ++i) {
    const unsigned char *ph = p + phoff + (size_t)i * phentsize;
    uint64_t off = mc_rd64(ph + 8), filesz = mc_rd64(ph + 0x20);
    if (off > MC_BLOB_MAX_LEN || filesz > MC_BLOB_MAX_LEN) return 0;
    end = max_sz(end, (size_t)(off + filesz));
  }
  return end <= MC_BLOB_MAX_LEN ? end : 0;
}

/* Fatbin container header (16 bytes readable): u32 magic, u16 version, u16 header size, u64
 * payload size. */
static size_t fatbin_length(const unsigned char *p) {
  uint16_t header = mc_rd16(p + 6);
  uint64_t payload = mc_rd64(p + 8);
  if (header < 16 || payload > MC_BLOB_MAX_LEN) return 0;
  return (size_t)header + (size_t)payload;
}

static const unsigned char ELF_MAGIC[4] = {0x7f, 'E', 'L', 'F'};
static const unsigned char FATBIN_BYTES[4] = {0x50, 0xED, 0x55, 0xBA}; /* FATBIN_MAGIC, LE */
static const char OFFLOAD_BUNDLE[] = "__CLANG_OFFLOAD_BUNDLE__";     /* 24 bytes */

static mc_blob_kind identify(const void *data, size_t *len, const known_span *k) {
  *len = 0;
  if (!data) return MC_BLOB_UNKNOWN;
  const unsigned char *p = (const unsigned char *)data;
  size_t n = readable_prefix(p, 64, k); /* the most any header check below reads */
  if (n == 0) return MC_BLOB_CORRUPT; /* not even its first byte can be read */
  if (truncated_magic(p, n, ELF_MAGIC, 4) || truncated_magic(p, n, FATBIN_BYTES, 4))
    return MC_BLOB_CORRUPT;
  int corrupt = 0;
  mc_blob_kind kind;
  if (n >= 4 && memcmp(p, ELF_MAGIC, 4) == 0) {
    if (n < 64) return MC_BLOB_CORRUPT; /* its header runs off the readable memory */
    kind = MC_BLOB_CUBIN;
    *len = elf64_length(p, &corrupt, k);
  } else if (n >= 4 && mc_rd32(p) == FATBIN_MAGIC) {
    if (n < 16) return MC_BLOB_CORRUPT;
    kind = MC_BLOB_FATBIN;
    *len = fatbin_length(p);
  } else if ((n >= 24 && memcmp(p, OFFLOAD_BUNDLE, 24) == 0) || (n >= 4 && memcmp(p, "CCOB", 4) == 0)) {
    /* Clang offload bundles (HIP fat binaries), plain or compressed, are binary data behind a
     * text magic: not PTX. Not recognised (so never cached on a partial comparison). */
    return MC_BLOB_UNKNOWN;
  } else if (p[0] == '\t' || p[0] == '\n' || p[0] == '\r' || (p[0] >= 0x20 && p[0] < 0x7f)) {
    /* PTX: text. Anything whose first byte is printable or whitespace is taken as NUL-terminated
     * text, which is how the driver reads it too; readable memory must hold its NUL. */
    *len = text_length(p, k);
    return *len ? MC_BLOB_PTX : MC_BLOB_CORRUPT;
  } else {
    return MC_BLOB_UNKNOWN;
  }
  if (*len && !range_readable_k(p, *len, k)) corrupt = 1; /* its end runs off readable memory */
  if (corrupt || !*len) {
    *len = 0;
    return corrupt ? MC_BLOB_CORRUPT : MC_BLOB_UNKNOWN;
  }
  return kind;
}

mc_blob_kind mc_blob_identify(const void *data, size_t *len) { return identify(data, len, NULL); }

mc_blob_kind mc_blob_identify_in(const void *data, size_t readable, size_t *len) {
  known_span k = {(uintptr_t)data, (uintptr_t)data + readable};
  if (k.hi < k.lo) k.hi = UINTPTR_MAX;
  return identify(data, len, readable ? &k : NULL);
}

int mc_blob_same(const unsigned char *copy, size_t len, mc_blob_kind kind, const void *data) {
  const unsigned char *p = (const unsigned char *)data;
  uintptr_t a = (uintptr_t)p, pg = page_size();
  /* The bytes that say how long the blob is: read together, so probe them if they cross a page. */
  size_t header = kind == MC_BLOB_CUBIN ? 64 : kind == MC_BLOB_FATBIN ? 16 : 1;
  if (header > len) header = len;
  uintptr_t mask = pg - 1; /* page_size() once: the loop runs at every hit on a heap blob */
  if (header && ((a ^ (a + header - 1)) & ~mask) && !range_readable(p, header)) return 0;
  /* page by page: the first chunk to the end of the blob's first page, then whole pages */
  for (size_t off = 0, chunk = (size_t)(pg - (a & mask)); off < len; off += chunk, chunk = pg) {
    if (chunk > len - off) chunk = len - off;
    if (!mc_same_bytes(copy + off, p + off, chunk)) return 0;
  }
  return len > 0;
}

const char *mc_blob_kind_name(mc_blob_kind kind) {
  switch (kind) {
  case MC_BLOB_CUBIN: return "cubin";
  case MC_BLOB_FATBIN: return "fatbin";
  case MC_BLOB_PTX: return "ptx";
  case MC_BLOB_CORRUPT: return "corrupt";
  default: return "unknown";
  }
}

/* ---- HIP code objects ---- */

#define BUNDLE_MAX_ENTRIES 4096 /* more means a header that is not a bundle's */
#define BUNDLE_MAX_ID 4096      /* the longest target id we accept */

/* A plain clang offload bundle: the magic (24 bytes), u64 entry count, then per entry u64 offset
 * (from the bundle's start), u64 size, u64 id length and the id (a target triple). */
static size_t bundle_length(const unsigned char *p) {
  size_t pos = 32, end = 32;
  if (!range_readable(p, pos)) return 0;
  uint64_t n = mc_rd64(p + 24);
  if (n == 0 || n > BUNDLE_MAX_ENTRIES) return 0;
  for (uint64_t i = 0; i < n; ++i) {
    if (!range_readable(p + pos, 24)) return 0;
    uint64_t off = mc_rd64(p + pos), size = mc_rd64(p + pos + 8), idlen = mc_rd64(p + pos + 16);
    if (off > MC_BLOB_MAX_LEN || size > MC_BLOB_MAX_LEN || idlen > BUNDLE_MAX_ID) return 0;
    pos += 24 + (size_t)idlen;
    end = max_sz(max_sz(end, pos), (size_t)(off + size));
  }
  return end <= MC_BLOB_MAX_LEN ? end : 0;
}

/* A compressed bundle: "CCOB", u16 version, u16 method, then the total size (u32 in version 2,
 * u64 in version 3; version 1 has none), the uncompressed size and an 8-byte hash. */
static size_t compressed_bundle_length(const unsigned char *p) {
  if (!range_readable(p, 16)) return 0;
  uint16_t version = mc_rd16(p + 4);
  size_t header = version == 2 ? 24 : version == 3 ? 32 : 0;
  uint64_t total = version == 2 ? mc_rd32(p + 8) : version == 3 ? mc_rd64(p + 8) : 0;
  if (!header || total < header || total > MC_BLOB_MAX_LEN) return 0;
  return (size_t)total;
}

size_t mc_blob_code_object_length(const void *data) {
  if (!data) return 0;
  const unsigned char *p = (const unsigned char *)data;
  size_t len = 0;
  if (range_readable(p, 24) && memcmp(p, OFFLOAD_BUNDLE, 24) == 0) {
    len = bundle_length(p);
  } else if (range_readable(p, 4) && memcmp(p, "CCOB", 4) == 0) {
    len = compressed_bundle_length(p);
  } else {
    mc_blob_identify(data, &len); /* 0 for unknown or corrupt; a length it gives is readable */
    return len;
  }
  return len && range_readable(p, len) ? len : 0;
}
