/* blob.c - blob format recognition and length derivation (see blob.h). */
#include "blob.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define FATBIN_MAGIC 0xBA55ED50u

static uint16_t rd16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint32_t rd32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t rd64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

/* 1 if every page of [p, p + n) is mapped (mincore), so reading it cannot fault on an unmapped
 * page. A header that places a table or the blob's end far beyond the blob is caught here instead
 * of faulting; the driver may have accepted such bytes without reading them (cuLibraryLoadData
 * loads lazily). */
static int range_mapped(const void *p, size_t n) {
  static long page;
  if (!page) page = sysconf(_SC_PAGESIZE);
  if (page <= 0) return 1;
  uintptr_t start = (uintptr_t)p & ~(uintptr_t)(page - 1), end = (uintptr_t)p + n;
  if (end < (uintptr_t)p) return 0;
  unsigned char vec[1024];
  while (start < end) {
    size_t len = end - start, max = sizeof vec * (size_t)page;
    if (len > max) len = max;
    if (mincore((void *)start, len, vec) != 0) return 0;
    start += (len + (size_t)page - 1) & ~(size_t)(page - 1);
  }
  return 1;
}

/* 64-bit little-endian ELF: the file ends at the furthest of the section header table, the
 * program header table and every section's contents. */
static size_t elf64_length(const unsigned char *p, int *corrupt) {
  if (p[4] != 2 /* ELFCLASS64 */ || p[5] != 1 /* little endian */) return 0;
  uint64_t phoff = rd64(p + 0x20), shoff = rd64(p + 0x28);
  uint16_t ehsize = rd16(p + 0x34), phentsize = rd16(p + 0x36), phnum = rd16(p + 0x38);
  uint16_t shentsize = rd16(p + 0x3A), shnum = rd16(p + 0x3C);
  if (ehsize < 64 || phoff > MC_BLOB_MAX_LEN || shoff > MC_BLOB_MAX_LEN) return 0;
  if ((shnum && shentsize < 64) || (phnum && phentsize < 56)) return 0;
  size_t end = ehsize;
  if (phnum) end = max_sz(end, (size_t)phoff + (size_t)phnum * phentsize);
  if (shnum) end = max_sz(end, (size_t)shoff + (size_t)shnum * shentsize);
  if (!range_mapped(p, end)) { /* the tables are not where the header says */
    *corrupt = 1;
    return 0;
  }
  if (shnum) {
    for (uint16_t i = 0; i < shnum; ++i) {
      const unsigned char *sh = p + shoff + (size_t)i * shentsize;
      uint32_t type = rd32(sh + 4);
      uint64_t off = rd64(sh + 0x18), size = rd64(sh + 0x20);
      if (type == 8 /* SHT_NOBITS */) continue;
      if (off > MC_BLOB_MAX_LEN || size > MC_BLOB_MAX_LEN) return 0;
      end = max_sz(end, (size_t)(off + size));
    }
  }
  for (uint16_t i = 0; i < phnum; ++i) {
    const unsigned char *ph = p + phoff + (size_t)i * phentsize;
    uint64_t off = rd64(ph + 8), filesz = rd64(ph + 0x20);
    if (off > MC_BLOB_MAX_LEN || filesz > MC_BLOB_MAX_LEN) return 0;
    end = max_sz(end, (size_t)(off + filesz));
  }
  return end <= MC_BLOB_MAX_LEN ? end : 0;
}

/* Fatbin container header: u32 magic, u16 version, u16 header size, u64 payload size. */
static size_t fatbin_length(const unsigned char *p) {
  uint16_t header = rd16(p + 6);
  uint64_t payload = rd64(p + 8);
  if (header < 16 || payload > MC_BLOB_MAX_LEN) return 0;
  return (size_t)header + (size_t)payload;
}

mc_blob_kind mc_blob_format(const void *data) {
  if (!data) return MC_BLOB_UNKNOWN;
  const unsigned char *p = (const unsigned char *)data;
  if (p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F') return MC_BLOB_CUBIN;
  if (rd32(p) == FATBIN_MAGIC) return MC_BLOB_FATBIN;
  /* Clang offload bundles (HIP fat binaries), plain or compressed, are binary data behind a text
   * magic: not PTX. Not recognised (so never cached on a partial comparison). */
  if (memcmp(p, "__CLANG_OFFLOAD_BUNDLE__", 24) == 0 || memcmp(p, "CCOB", 4) == 0)
    return MC_BLOB_UNKNOWN;
  /* PTX: text. Anything whose first byte is printable or whitespace is taken as NUL-terminated
   * text, which is how the driver reads it too. */
  if (p[0] == '\t' || p[0] == '\n' || p[0] == '\r' || (p[0] >= 0x20 && p[0] < 0x7f))
    return MC_BLOB_PTX;
  return MC_BLOB_UNKNOWN;
}

mc_blob_kind mc_blob_identify(const void *data, size_t *len) {
  *len = 0;
  const unsigned char *p = (const unsigned char *)data;
  mc_blob_kind kind = mc_blob_format(data);
  int corrupt = 0;
  switch (kind) {
  case MC_BLOB_CUBIN: *len = elf64_length(p, &corrupt); break;
  case MC_BLOB_FATBIN: *len = fatbin_length(p); break;
  case MC_BLOB_PTX: *len = strlen((const char *)p) + 1; return MC_BLOB_PTX;
  default: return MC_BLOB_UNKNOWN;
  }
  if (*len && !range_mapped(p, *len)) corrupt = 1; /* its end runs off the mapped memory */
  if (corrupt || !*len) {
    *len = 0;
    return corrupt ? MC_BLOB_CORRUPT : MC_BLOB_UNKNOWN;
  }
  return kind;
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

#define BUNDLE_MAGIC "__CLANG_OFFLOAD_BUNDLE__"
#define BUNDLE_MAX_ENTRIES 4096 /* more means a header that is not a bundle's */
#define BUNDLE_MAX_ID 4096      /* the longest target id we accept */

/* A plain clang offload bundle: the magic (24 bytes), u64 entry count, then per entry u64 offset
 * (from the bundle's start), u64 size, u64 id length and the id (a target triple). */
static size_t bundle_length(const unsigned char *p) {
  size_t pos = 32, end = 32;
  if (!range_mapped(p, pos)) return 0;
  uint64_t n = rd64(p + 24);
  if (n == 0 || n > BUNDLE_MAX_ENTRIES) return 0;
  for (uint64_t i = 0; i < n; ++i) {
    if (!range_mapped(p + pos, 24)) return 0;
    uint64_t off = rd64(p + pos), size = rd64(p + pos + 8), idlen = rd64(p + pos + 16);
    if (off > MC_BLOB_MAX_LEN || size > MC_BLOB_MAX_LEN || idlen > BUNDLE_MAX_ID) return 0;
    pos += 24 + (size_t)idlen;
    end = max_sz(max_sz(end, pos), (size_t)(off + size));
  }
  return end <= MC_BLOB_MAX_LEN ? end : 0;
}

/* A compressed bundle: "CCOB", u16 version, u16 method, then the total size (u32 in version 2,
 * u64 in version 3; version 1 has none), the uncompressed size and an 8-byte hash. */
static size_t compressed_bundle_length(const unsigned char *p) {
  if (!range_mapped(p, 16)) return 0;
  uint16_t version = rd16(p + 4);
  size_t header = version == 2 ? 24 : version == 3 ? 32 : 0;
  uint64_t total = version == 2 ? rd32(p + 8) : version == 3 ? rd64(p + 8) : 0;
  if (!header || total < header || total > MC_BLOB_MAX_LEN) return 0;
  return (size_t)total;
}

size_t mc_blob_code_object_length(const void *data) {
  if (!data) return 0;
  const unsigned char *p = (const unsigned char *)data;
  size_t len = 0;
  if (range_mapped(p, 24) && memcmp(p, BUNDLE_MAGIC, 24) == 0) len = bundle_length(p);
  else if (range_mapped(p, 4) && memcmp(p, "CCOB", 4) == 0) len = compressed_bundle_length(p);
  else mc_blob_identify(data, &len); /* 0 for unknown or corrupt */
  return len && range_mapped(p, len) ? len : 0;
}
