/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* fake_globals.h - module-scope device state in the fake CUDA driver (included by fakecuda.c).
 *
 * A blob whose text declares the PTX variable `counter` (`.global .align 4 .u32 counter;`, or
 * `... counter = N;`) gets, in every library or module loaded from it, its own 4-byte variable,
 * N (default 0) at load: a fresh load starts from the image's initial value, a module kept loaded
 * keeps what was written. The kernel `count_up(unsigned *out)` stores the variable's value
 * through `out` and increments it (`out[0] = atomicAdd(&counter, 1)`), on the cuLaunchKernel and
 * the cuGraphLaunch paths (there with FAKECUDA_PARAM_SIZES=8, so the node holds the pointer); in
 * a module without the variable it stores 0xFFFFFFFF. cuLibraryGetGlobal and cuModuleGetGlobal_v2
 * hand out the variable's address (the fake's device memory is host memory) and its size;
 * fake_global_gets() counts their successful calls. Lock: g_lock, like the rest of the fake.
 */
#ifndef MGPU_CACHED_TEST_FAKE_GLOBALS_H
#define MGPU_CACHED_TEST_FAKE_GLOBALS_H

#include <stdlib.h>

static long g_global_gets; /* successful cuLibraryGetGlobal / cuModuleGetGlobal_v2 calls */

/* At parse (lib zeroed): find `.global ... counter[ = N];` in the blob's n bytes. */
static void fake_globals_parse(struct fake_lib *lib, const unsigned char *p, size_t n) {
  for (size_t i = 0; i + 8 < n; ++i) {
    if (memcmp(p + i, ".global ", 8) != 0) continue;
    size_t j = i + 8;
    while (j < n && p[j] && p[j] != ';' && p[j] != '\n') {
      if (j + 7 <= n && memcmp(p + j, "counter", 7) == 0 && (j + 7 == n || p[j + 7] == ';' ||
                                                             p[j + 7] == ' ')) {
        lib->has_counter = 1;
        size_t k = j + 7;
        while (k < n && p[k] == ' ') ++k;
        if (k < n && p[k] == '=') lib->counter = (unsigned)strtoul((const char *)p + k + 1, NULL, 10);
        return;
      }
      ++j;
    }
  }
}

/* A launch of f: its first argument through params (cuLaunchKernel) or in a graph node's copied
 * values (vals); read only for count_up. */
static void fake_globals_launch(struct fake_func *f, void **params, const unsigned char *vals) {
  if (!f || f->magic != 0xF0 || strcmp(f->lib->names[f->index], "count_up") != 0) return;
  void *out = NULL;
  if (params && params[0]) memcpy(&out, params[0], sizeof out);
  else if (vals) memcpy(&out, vals, sizeof out);
  if (out) *(unsigned *)out = f->lib->has_counter ? f->lib->counter++ : 0xFFFFFFFFu;
}

static CUresult fake_get_global(CUdeviceptr *dptr, size_t *bytes, struct fake_lib *lib,
                                int magic, const char *name) {
  pthread_mutex_lock(&g_lock);
  CUresult r = 0;
  if (!lib || lib->magic != magic || lib->unloaded) r = 400; /* INVALID_HANDLE */
  else if (!name || strcmp(name, "counter") != 0 || !lib->has_counter) r = 500; /* NOT_FOUND */
  if (!r) {
    if (dptr) *dptr = (CUdeviceptr)(uintptr_t)&lib->counter;
    if (bytes) *bytes = sizeof lib->counter;
    g_global_gets++;
  }
  pthread_mutex_unlock(&g_lock);
  return r;
}

EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
                                   const char *name) {
  return fake_get_global(dptr, bytes, (struct fake_lib *)library, 0x11B, name);
}
EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule module,
                                     const char *name) {
  return fake_get_global(dptr, bytes, (struct fake_lib *)module, 0x30D, name);
}
EXPORT long fake_global_gets(void) {
  pthread_mutex_lock(&g_lock);
  long n = g_global_gets;
  pthread_mutex_unlock(&g_lock);
  return n;
}

#endif
