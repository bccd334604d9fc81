/* blob.c - blob format recognition and length derivation (see blob.h). */
#include "blob.h"

#include <stdint.h>
#include <string.h>

#define FATBIN_MAGIC 0xBA55ED50u

static uint16_t rd16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint32_t rd32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t rd64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

/* 64-bit little-endian ELF: the file ends at the furthest of the section header table, the
 * program header table and every section's contents. */
static size_t elf64_length(const unsigned char *p) {
  if (p[4] != 2 /* ELFCLASS64 */ || p[5] != 1 /* little endian */) return 0;
  uint64_t phoff = rd64(p + 0x20), shoff = rd64(p + 0x28);
  uint16_t ehsize = rd16(p + 0x34), phentsize = rd16(p + 0x36), phnum = rd16(p + 0x38);
  uint16_t shentsize = rd16(p + 0x3A), shnum = rd16(p + 0x3C);
  if (ehsize < 64 || phoff > MC_BLOB_MAX_LEN || shoff > MC_BLOB_MAX_LEN) return 0;
  if ((shnum && shentsize < 64) || (phnum && phentsize < 56)) return 0;
  size_t end = ehsize;
  if (phnum) end = max_sz(end, (size_t)phoff + (size_t)phnum * phentsize);
  if (shnum) {
    end = max_sz(end, (size_t)shoff + (size_t)shnum * shentsize);
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
  switch (mc_blob_format(data)) {
  case MC_BLOB_CUBIN: *len = elf64_length(p); return *len ? MC_BLOB_CUBIN : MC_BLOB_UNKNOWN;
  case MC_BLOB_FATBIN: *len = fatbin_length(p); return *len ? MC_BLOB_FATBIN : MC_BLOB_UNKNOWN;
  case MC_BLOB_PTX: *len = strlen((const char *)p) + 1; return MC_BLOB_PTX;
  default: return MC_BLOB_UNKNOWN;
  }
}

const char *mc_blob_kind_name(mc_blob_kind kind) {
  switch (kind) {
  case MC_BLOB_CUBIN: return "cubin";
  case MC_BLOB_FATBIN: return "fatbin";
  case MC_BLOB_PTX: return "ptx";
  default: return "unknown";
  }
}
