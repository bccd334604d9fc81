/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* blob_state.c - module-scope state of a GPU image (see blob_state.h). Bounded parsers over a
 * buffer whose every byte is readable; any inconsistency answers "stateful". */
#include "support/blob_state.h"
#include "support/thread.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define STATEFUL 1
#define STATELESS 0

#define EM_CUDA 190
#define EM_AMDGPU 224
#define SHF_WRITE 0x1
#define SHT_SYMTAB 2
#define SHT_DYNSYM 11

#define FATBIN_MAGIC 0xBA55ED50u
#define FATBIN_KIND_PTX 1
#define FATBIN_KIND_ELF 2
#define FATBIN_FLAG_LZ4 0x2000u
#define FATBIN_FLAG_ZSTD 0x8000u
#define FATBIN_ENTRY_MIN 64 /* the entry header fields read below */


/* [off, off + size) inside [0, n) */
static int inside(uint64_t off, uint64_t size, size_t n) { return off <= n && size <= n - off; }

static inline int starts(const char *s, const char *prefix) {
  while (*prefix)
    if (*s++ != *prefix++) return 0;
  return 1;
}

/* ---- ELF ---- */

/* One past the last NUL of the string table [tab, tab + size) (0: none): a string that begins
 * below it ends inside the table. Found once per table (a table need not end in a NUL). */
static uint64_t str_end(const unsigned char *p, uint64_t tab, uint64_t size) {
  const unsigned char *z = size ? memrchr(p + tab, 0, (size_t)size) : NULL;
  return z ? (uint64_t)(z - (p + tab)) + 1 : 0;
}

/* The NUL-terminated string at `off` of the string table at tab (end: str_end's), or NULL. */
static const char *elf_str(const unsigned char *p, uint64_t tab, uint64_t end, uint64_t off) {
  return off < end ? (const char *)p + tab + off : NULL;
}

typedef struct {
  const unsigned char *p;
  size_t n;
  uint64_t shoff;
  uint16_t shentsize, shnum;
} elf_view;

static const unsigned char *section(const elf_view *e, uint32_t i) {
  return e->p + e->shoff + (uint64_t)i * e->shentsize;
}

/* Whether a symbol table section holds a data symbol that counts as state. */
static int symbols_stateful(const elf_view *e, const unsigned char *sh, int machine) {
  uint64_t off = mc_rd64(sh + 0x18), size = mc_rd64(sh + 0x20), entsize = mc_rd64(sh + 0x38);
  uint32_t link = mc_rd32(sh + 0x28);
  if (entsize < 24 || !inside(off, size, e->n) || link >= e->shnum) return STATEFUL;
  const unsigned char *strsh = section(e, link);
  uint64_t stroff = mc_rd64(strsh + 0x18), strsize = mc_rd64(strsh + 0x20);
  if (!inside(stroff, strsize, e->n)) return STATEFUL;
  uint64_t strend = str_end(e->p, stroff, strsize);
  for (uint64_t s = off; s + entsize <= off + size; s += entsize) {
    const unsigned char *sym = e->p + s;
    unsigned type = sym[4] & 0xf;
    uint16_t shndx = mc_rd16(sym + 6);
    if (type != 1 /* OBJECT */ && type != 5 /* COMMON */ && type != 6 /* TLS */) continue;
    if (shndx == 0 /* undefined: defined elsewhere, not here */) continue;
    if (machine == EM_CUDA) return STATEFUL;
    /* AMDGPU: a kernel descriptor `K.kd` in a read-only section is the kernel, not data. */
    const char *name = elf_str(e->p, stroff, strend, mc_rd32(sym));
    size_t len = name ? strlen(name) : 0;
    if (type != 1 || !name || len < 4 || strcmp(name + len - 3, ".kd") != 0 || shndx >= e->shnum)
      return STATEFUL;
    if (mc_rd64(section(e, shndx) + 8) & SHF_WRITE) return STATEFUL;
  }
  return STATELESS;
}

static int elf_stateful(const unsigned char *p, size_t n) {
  if (n < 64 || memcmp(p, "\x7f" "ELF", 4) != 0 || p[4] != 2 || p[5] != 1) return STATEFUL;
  int machine = mc_rd16(p + 0x12);
  if (machine != EM_CUDA && machine != EM_AMDGPU) return STATEFUL;
  elf_view e = {p, n, mc_rd64(p + 0x28), mc_rd16(p + 0x3A), mc_rd16(p + 0x3C)};
  uint16_t shstrndx = mc_rd16(p + 0x3E);
  if (e.shnum == 0 || e.shentsize < 64 || shstrndx == 0 || shstrndx >= e.shnum ||
      !inside(e.shoff, (uint64_t)e.shnum * e.shentsize, n))
    return STATEFUL; /* no sections, or no names for them: cannot tell */
  const unsigned char *strsh = section(&e, shstrndx);
  uint64_t stroff = mc_rd64(strsh + 0x18), strsize = mc_rd64(strsh + 0x20);
  if (!inside(stroff, strsize, n)) return STATEFUL;
  uint64_t strend = str_end(p, stroff, strsize);
  for (uint32_t i = 1; i < e.shnum; ++i) {
    const unsigned char *sh = section(&e, i);
    uint32_t at = mc_rd32(sh);
    const char *name = elf_str(p, stroff, strend, at);
    if (!name) return STATEFUL;
    uint32_t type = mc_rd32(sh + 4);
    uint64_t flags = mc_rd64(sh + 8);
    /* a 300-kernel module has ~900 sections: where the table holds 10 bytes from the name on,
     * one fixed-length comparison (a shorter name's NUL differs from the prefix's byte there) */
    if (strsize - at >= 10 ? memcmp(name, ".nv.global", 10) == 0 : starts(name, ".nv.global"))
      return STATEFUL;
    if (flags & SHF_WRITE) {
      int loader_or_scratch =
          machine == EM_CUDA ? (starts(name, ".nv.shared.") || starts(name, ".nv.local."))
                             : (strcmp(name, ".dynamic") == 0 || strcmp(name, ".got") == 0 ||
                                strcmp(name, ".relro_padding") == 0);
      if (!loader_or_scratch) return STATEFUL;
    }
    if ((type == SHT_SYMTAB || type == SHT_DYNSYM) && symbols_stateful(&e, sh, machine))
      return STATEFUL;
  }
  return STATELESS;
}

/* ---- PTX ---- */

static int word_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$' || c == '%';
}

/* The PTX scan below reads about a megabyte for a module of a few hundred kernels (the PTX entry
 * of a fatbin, decompressed), once per driver load, on the module's first call: one pass, sixteen
 * bytes at a time where SSE2 is there (every x86-64), that checks the bytes and finds the dots
 * that can begin a token (a dot after a word character, a dot or a ']' never does: `ld.global`,
 * `%r1.x`, `[a].b`), so the byte-by-byte work is done for those few only; a simple loop elsewhere. */

/* Whether c is not text (tab, newline, carriage return, 0x20-0x7e) or is a '#'. */
static int ptx_bad_byte(unsigned char c) {
  return c == '#' || c >= 0x7f || (c < 0x20 && c != '\t' && c != '\n' && c != '\r');
}

/* Whether a '.' right after c continues a token rather than beginning one. */
static int ptx_joins(unsigned char c) { return word_char(c) || c == '.' || c == ']'; }

/* The token that begins with the '.' at p[i] (i < n): STATEFUL if it names a state space outside
 * a kernel parameter's attribute (a state space right after `.ptr`, only white space between).
 * *ptr_end: just after the last `.ptr` token ((size_t)-1: none yet); updated. */
static int ptx_token_stateful(const unsigned char *p, size_t n, size_t i, size_t *ptr_end) {
  static const struct { const char *w; size_t len; } spaces[] = {
      {"global", 6}, {"const", 5}, {"tex", 3}, {"texref", 6}, {"surfref", 7}, {"samplerref", 10}};
  size_t j = i + 1;
  while (j < n && word_char(p[j])) ++j;
  size_t len = j - i - 1;
  const char *w = (const char *)p + i + 1;
  int after_ptr = *ptr_end != (size_t)-1 && *ptr_end <= i;
  for (size_t k = *ptr_end; after_ptr && k < i; ++k)
    if (p[k] != ' ' && p[k] != '\t' && p[k] != '\n' && p[k] != '\r') after_ptr = 0;
  if (len == 3 && w[0] == 'p' && w[1] == 't' && w[2] == 'r') *ptr_end = j;
  if (len >= 3 && len <= 10 && (w[0] == 'g' || w[0] == 'c' || w[0] == 't' || w[0] == 's'))
    for (size_t k = 0; k < sizeof spaces / sizeof *spaces; ++k)
      if (len == spaces[k].len && memcmp(w, spaces[k].w, len) == 0 && !after_ptr)
        return STATEFUL;
  return STATELESS;
}

#if defined(__SSE2__)
/* Bytes of v in [lo, hi] (both below 0x80). */
static __m128i in_range(__m128i v, char lo, char hi) {
  return _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8((char)(lo - 1))),
                       _mm_cmplt_epi8(v, _mm_set1_epi8((char)(hi + 1))));
}
#endif

/* PTX text of at most n bytes (up to its NUL). Every byte must be text; a '#' is a preprocessor
 * directive (or a '#' in a comment). Tokens begin with a '.' that does not continue a word. */
static int ptx_stateful(const unsigned char *p, size_t n) {
  const unsigned char *nul = memchr(p, 0, n);
  if (nul) n = (size_t)(nul - p);
  size_t ptr_end = (size_t)-1;
  size_t i = 0;
  if (n) { /* the first byte: a '.' there begins a token */
    if (ptx_bad_byte(p[0])) return STATEFUL;
    if (p[0] == '.' && ptx_token_stateful(p, n, 0, &ptr_end)) return STATEFUL;
    i = 1;
  }
#if defined(__SSE2__)
  const __m128i hash = _mm_set1_epi8('#'), del = _mm_set1_epi8(0x7f), space = _mm_set1_epi8(0x20);
  const __m128i tab = _mm_set1_epi8('\t'), nl = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r');
  const __m128i dot = _mm_set1_epi8('.'), bracket = _mm_set1_epi8(']'), lower = _mm_set1_epi8(0x20);
  const __m128i under = _mm_set1_epi8('_'), dollar = _mm_set1_epi8('$'), pct = _mm_set1_epi8('%');
  for (; n - i >= 16; i += 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
    /* signed compare: bytes >= 0x80 are negative, so below 0x20 as control characters are */
    __m128i ctl = _mm_andnot_si128(
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, tab), _mm_cmpeq_epi8(v, nl)),
                     _mm_cmpeq_epi8(v, cr)),
        _mm_cmplt_epi8(v, space));
    __m128i bad = _mm_or_si128(_mm_or_si128(ctl, _mm_cmpeq_epi8(v, hash)),
                               _mm_cmpeq_epi8(v, del));
    if (_mm_movemask_epi8(bad)) return STATEFUL;
    unsigned dots = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, dot));
    if (!dots) continue;
    /* the byte before each: a word character, '.' or ']' (p[i - 1] is readable: i >= 1) */
    __m128i b = _mm_loadu_si128((const __m128i *)(p + i - 1));
    __m128i joins = _mm_or_si128(
        _mm_or_si128(in_range(_mm_or_si128(b, lower), 'a', 'z'), in_range(b, '0', '9')),
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(b, under), _mm_cmpeq_epi8(b, dollar)),
                     _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(b, pct), _mm_cmpeq_epi8(b, dot)),
                                  _mm_cmpeq_epi8(b, bracket))));
    for (unsigned t = dots & ~(unsigned)_mm_movemask_epi8(joins); t; t &= t - 1)
      if (ptx_token_stateful(p, n, i + (size_t)__builtin_ctz(t), &ptr_end)) return STATEFUL;
  }
#endif
  for (; i < n; ++i) {
    if (ptx_bad_byte(p[i])) return STATEFUL;
    if (p[i] == '.' && !ptx_joins(p[i - 1]) && ptx_token_stateful(p, n, i, &ptr_end))
      return STATEFUL;
  }
  return STATELESS;
}

/* ---- fatbin ---- */

typedef size_t (*zstd_decompress_fn)(void *, size_t, const void *, size_t);
typedef unsigned (*zstd_is_error_fn)(size_t);
typedef int (*lz4_decompress_fn)(const char *, char *, int, int);

/* Each decompressor is loaded at its first need only (a dlopen costs ~60-120 us). */
static struct {
  pthread_once_t zstd_once, lz4_once;
  zstd_decompress_fn zstd;
  zstd_is_error_fn zstd_is_error;
  lz4_decompress_fn lz4;
} g_dec = {PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, NULL, NULL, NULL};

static void load_zstd(void) {
  void *z = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
  if (z) {
    *(void **)&g_dec.zstd = dlsym(z, "ZSTD_decompress");
    *(void **)&g_dec.zstd_is_error = dlsym(z, "ZSTD_isError");
  }
}

static void load_lz4(void) {
  void *l = dlopen("liblz4.so.1", RTLD_NOW | RTLD_LOCAL);
  if (l) *(void **)&g_dec.lz4 = dlsym(l, "LZ4_decompress_safe");
}

/* The decompressors `flags` (a fatbin entry's) asks for, loaded. */
static void load_decompressors(uint64_t flags) {
  if (flags & FATBIN_FLAG_ZSTD) pthread_once(&g_dec.zstd_once, load_zstd);
  if (flags & FATBIN_FLAG_LZ4) pthread_once(&g_dec.lz4_once, load_lz4);
}

/* The entry's payload decompressed into a new buffer of exactly `out_len` bytes, or NULL. */
static unsigned char *decompress(uint64_t flags, const unsigned char *src, size_t src_len,
                                 size_t out_len) {
  if (out_len == 0 || out_len > MC_BLOB_MAX_LEN || src_len > (size_t)INT32_MAX) return NULL;
  load_decompressors(flags);
  unsigned char *out = malloc(out_len);
  if (!out) return NULL;
  int ok = 0;
  if ((flags & FATBIN_FLAG_ZSTD) && !(flags & FATBIN_FLAG_LZ4)) {
    if (g_dec.zstd && g_dec.zstd_is_error) {
      size_t r = g_dec.zstd(out, out_len, src, src_len);
      ok = !g_dec.zstd_is_error(r) && r == out_len;
    }
  } else if ((flags & FATBIN_FLAG_LZ4) && !(flags & FATBIN_FLAG_ZSTD)) {
    if (g_dec.lz4 && out_len <= (size_t)INT32_MAX)
      ok = g_dec.lz4((const char *)src, (char *)out, (int)src_len, (int)out_len) == (int)out_len;
  }
  if (!ok) {
    free(out);
    return NULL;
  }
  return out;
}

static int fatbin_entry_stateful(const unsigned char *e, const unsigned char *payload,
                                 size_t size) {
  uint16_t kind = mc_rd16(e);
  uint32_t csize = mc_rd32(e + 16);
  uint64_t flags = mc_rd64(e + 40), dsize = mc_rd64(e + 56);
  if (kind != FATBIN_KIND_PTX && kind != FATBIN_KIND_ELF) return STATEFUL;
  const unsigned char *data = payload;
  unsigned char *owned = NULL;
  size_t len = size;
  if (flags & (FATBIN_FLAG_LZ4 | FATBIN_FLAG_ZSTD)) {
    size_t src = csize ? csize : size;
    if (src > size || dsize > MC_BLOB_MAX_LEN) return STATEFUL;
    owned = decompress(flags, payload, src, (size_t)dsize);
    if (!owned) return STATEFUL;
    data = owned;
    len = (size_t)dsize;
  } else if (csize != 0) {
    return STATEFUL; /* a compressed size without a compression we know */
  }
  int r = kind == FATBIN_KIND_ELF ? elf_stateful(data, len) : ptx_stateful(data, len);
  free(owned);
  return r;
}

/* Is e (a fatbin entry header) an ELF entry built for exactly compute capability sm? */
static int entry_is_sass_for(const unsigned char *e, int sm) {
  return sm > 0 && mc_rd16(e) == FATBIN_KIND_ELF && mc_rd32(e + 28) == (uint32_t)sm;
}

/* The entries of a fatbin whose headers add up, in order: f(e, payload, size, arg) for each (with
 * sm > 0: each ELF entry for exactly sm, the others skipped) until it returns nonzero (that value
 * is returned). -1: a header does not add up (or no entry). */
typedef int (*entry_fn)(const unsigned char *e, const unsigned char *payload, size_t size,
                        void *arg);
static int fatbin_each(const unsigned char *p, size_t n, int sm, entry_fn f, void *arg) {
  if (n < 16 || mc_rd32(p) != FATBIN_MAGIC) return -1;
  uint64_t header = mc_rd16(p + 6), total = mc_rd64(p + 8);
  if (header < 16 || !inside(header, total, n)) return -1;
  uint64_t pos = header, end = header + total;
  int entries = 0;
  while (pos < end) {
    if (end - pos < FATBIN_ENTRY_MIN) return -1;
    const unsigned char *e = p + pos;
    uint64_t ehs = mc_rd32(e + 4), size = mc_rd64(e + 8);
    if (ehs < FATBIN_ENTRY_MIN || ehs > end - pos || size > end - pos - ehs) return -1;
    int r = sm > 0 && !entry_is_sass_for(e, sm) ? 0 : f(e, e + ehs, (size_t)size, arg);
    if (r) return r;
    entries++;
    pos += ehs + size;
  }
  return entries ? 0 : -1;
}

/* Is e an entry the driver loads on a device of compute capability sm without compiling PTX:
 * an uncompressed ELF entry for exactly sm whose payload is a loadable 64-bit executable
 * (ET_EXEC, not a relocatable -rdc object) with sm in its flags (the SM byte at bits 8-15 of
 * e_flags, or bits 0-7 in the older ABI)? Anything else leaves every entry to be read. */
static int find_sass(const unsigned char *e, const unsigned char *payload, size_t size, void *arg) {
  int sm = *(const int *)arg; /* fatbin_each passed only entries whose header says sm */
  if ((mc_rd64(e + 40) & (FATBIN_FLAG_LZ4 | FATBIN_FLAG_ZSTD)) || mc_rd32(e + 16) != 0) return 0;
  if (size < 64 || mc_rd32(payload) != 0x464C457Fu /* "\x7fELF" */ || payload[4] != 2 /* 64-bit */ ||
      payload[5] != 1 /* little-endian */ || mc_rd16(payload + 16) != 2 /* ET_EXEC */)
    return 0;
  uint32_t flags = mc_rd32(payload + 48);
  return ((flags >> 8) & 0xff) == (uint32_t)sm || (flags & 0xff) == (uint32_t)sm;
}

/* The compute capability whose entries the driver loads from this fatbin on a device of `sm`:
 * sm itself when the fatbin holds a loadable ELF entry built for exactly that architecture
 * (find_sass; the driver prefers a matching cubin to compiling PTX); else 0 (every entry may be
 * the one loaded). Every entry whose header says sm is then read, loadable or not. */
static int loaded_sm(const unsigned char *p, size_t n, int sm) {
  if (sm <= 0) return 0;
  return fatbin_each(p, n, sm, find_sass, &sm) == 1 ? sm : 0;
}

static int entry_stateful(const unsigned char *e, const unsigned char *payload, size_t size,
                          void *arg) {
  (void)arg;
  return fatbin_entry_stateful(e, payload, size) ? 1 : 0;
}

/* sm: the architecture whose entries are loaded (loaded_sm), 0 for all. */
static int fatbin_stateful(const unsigned char *p, size_t n, int sm) {
  return fatbin_each(p, n, sm, entry_stateful, NULL) == 0 ? STATELESS : STATEFUL;
}

/* The verdict, sm already resolved by loaded_sm. */
static int stateful_resolved(const void *data, size_t len, mc_blob_kind kind, int sm) {
  const unsigned char *p = (const unsigned char *)data;
  if (!p || !len) return STATEFUL;
  switch (kind) {
  case MC_BLOB_CUBIN: return elf_stateful(p, len);
  case MC_BLOB_FATBIN: return fatbin_stateful(p, len, sm);
  case MC_BLOB_PTX: return ptx_stateful(p, len);
  default: return STATEFUL;
  }
}

int mc_blob_stateful(const void *data, size_t len, mc_blob_kind kind) {
  return stateful_resolved(data, len, kind, 0);
}

int mc_blob_stateful_on(const void *data, size_t len, mc_blob_kind kind, int sm) {
  int loaded = kind == MC_BLOB_FATBIN && data ? loaded_sm(data, len, sm) : 0;
  return stateful_resolved(data, len, kind, loaded);
}

/* ---- the scan beside the driver load ---- */

static int or_flags(const unsigned char *e, const unsigned char *payload, size_t size,
                    void *arg) {
  (void)payload, (void)size;
  *(uint64_t *)arg |= mc_rd64(e + 40);
  return 0;
}

/* The compression flags of the entries the scan of a fatbin reads (those of architecture `sm` as
 * loaded_sm resolved it; 0: all), or'ed (those of entries up to the first whose header does not
 * add up: the scan calls that one stateful without decompressing anything). */
static uint64_t fatbin_compressions(const unsigned char *p, size_t n, int sm) {
  uint64_t all = 0;
  fatbin_each(p, n, sm, or_flags, &all);
  return all;
}

static int costly_entry(const unsigned char *e, const unsigned char *payload, size_t size,
                        void *arg) {
  (void)payload, (void)size, (void)arg;
  return mc_rd16(e) != FATBIN_KIND_ELF || (mc_rd64(e + 40) & (FATBIN_FLAG_LZ4 | FATBIN_FLAG_ZSTD));
}

/* Whether the scan reads only section headers (an ELF image, or a fatbin whose entries read are
 * uncompressed ELF): microseconds, not worth a thread. */
static int scan_is_cheap(const unsigned char *p, size_t n, mc_blob_kind kind, int sm) {
  if (kind == MC_BLOB_CUBIN) return 1;
  return kind == MC_BLOB_FATBIN && fatbin_each(p, n, sm, costly_entry, NULL) == 0;
}

int mc_blob_state_wants_sm(const void *data, size_t len, mc_blob_kind kind) {
  if (kind != MC_BLOB_FATBIN || !data) return 0;
  return (fatbin_compressions(data, len, 0) & (FATBIN_FLAG_LZ4 | FATBIN_FLAG_ZSTD)) != 0;
}

/* The scan, then the copy where it is wanted (see copy_always). */
static int scan_and_copy(mc_blob_state_scan *scan) {
  int r = stateful_resolved(scan->data, scan->len, scan->kind, scan->sm);
  if (scan->copy && (r == STATELESS || scan->copy_always)) {
    memcpy(scan->copy, scan->data, scan->len);
    scan->copied = 1;
  }
  return r;
}

static void *scan_main(void *arg) {
  mc_blob_state_scan *scan = arg;
  scan->result = scan_and_copy(scan);
  return NULL;
}

void mc_blob_state_start(mc_blob_state_scan *scan, const void *data, size_t len,
                         mc_blob_kind kind, int sm, void *copy, int copy_always) {
  scan->data = data;
  scan->len = len;
  scan->kind = kind;
  scan->sm = kind == MC_BLOB_FATBIN && data ? loaded_sm(data, len, sm) : 0; /* resolved here */
  scan->copy = data ? copy : NULL;
  scan->copy_always = copy_always;
  scan->copied = 0;
  scan->started = 0;
  scan->result = STATEFUL;
  /* A large image goes to the helper when its scan reads more than headers, or to be copied. */
  if (!data || len < MC_BLOB_STATE_ASYNC_MIN ||
      (!scan->copy && scan_is_cheap(data, len, kind, scan->sm)))
    return;
  /* Every dlopen the scan may need, here: the helper must never wait for the loader. */
  if (kind == MC_BLOB_FATBIN) load_decompressors(fatbin_compressions(data, len, scan->sm));
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return;
  pthread_attr_setstacksize(&attr, (size_t)256 << 10); /* the decompressors allocate on the heap */
  int e = mc_thread_start(&scan->thread, &attr, scan_main, scan); /* signals blocked */
  pthread_attr_destroy(&attr);
  if (e == 0) scan->started = 1;
}

int mc_blob_state_finish(mc_blob_state_scan *scan) {
  if (!scan->started) return scan_and_copy(scan);
  pthread_join(scan->thread, NULL);
  scan->started = 0;
  return scan->result;
}
