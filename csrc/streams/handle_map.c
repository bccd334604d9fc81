/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* handle_map.c - driver object -> record map, insert-only, lock-free reads (see handle_map.h). */
#include "streams/handle_map.h"

#include <stdint.h>
#include <stdlib.h>

typedef struct hm_entry {
  const void *key; /* atomic: NULL (empty) or a driver object; written once, after rec */
  void *rec;       /* atomic: the record; written once, before key */
} hm_entry;

typedef struct hm_table {
  size_t mask;        /* capacity - 1 (a power of two); immutable */
  size_t n;           /* entries in use; caller's lock */
  hm_entry entries[]; /* calloc'ed */
} hm_table;

static hm_table *g_table; /* atomic: published with release, never freed */

static size_t hm_hash(const void *key) {
  uint64_t v = (uint64_t)(uintptr_t)key;
  v ^= v >> 33;
  v *= 0xff51afd7ed558ccdull;
  v ^= v >> 33;
  return (size_t)v;
}

void *mc_hmap_find(const void *key) {
  hm_table *t = __atomic_load_n(&g_table, __ATOMIC_ACQUIRE);
  if (!t || !key) return NULL;
  for (size_t i = hm_hash(key) & t->mask;; i = (i + 1) & t->mask) {
    const void *k = __atomic_load_n(&t->entries[i].key, __ATOMIC_ACQUIRE);
    if (!k) return NULL;
    if (k == key) return __atomic_load_n(&t->entries[i].rec, __ATOMIC_ACQUIRE);
  }
}

static void put(hm_table *t, const void *key, void *rec) {
  size_t i = hm_hash(key) & t->mask;
  while (t->entries[i].key) i = (i + 1) & t->mask;
  __atomic_store_n(&t->entries[i].rec, rec, __ATOMIC_RELEASE);
  __atomic_store_n(&t->entries[i].key, key, __ATOMIC_RELEASE);
  t->n++;
}

static hm_table *table_new(size_t cap) {
  hm_table *t = calloc(1, sizeof *t + cap * sizeof(hm_entry));
  if (t) t->mask = cap - 1;
  return t;
}

int mc_hmap_insert(const void *key, void *rec) {
  hm_table *t = g_table;
  if (!t || 2 * (t->n + 1) > t->mask + 1) { /* keep the load at most one half */
    hm_table *nt = table_new(t ? 2 * (t->mask + 1) : 32);
    if (!nt) return -1;
    for (size_t i = 0; t && i <= t->mask; ++i)
      if (t->entries[i].key) put(nt, t->entries[i].key, t->entries[i].rec);
    __atomic_store_n(&g_table, nt, __ATOMIC_RELEASE);
    t = nt;
  }
  put(t, key, rec);
  return 0;
}

void mc_hmap_for_each(void (*fn)(const void *key, void *rec, void *ctx), void *ctx) {
  hm_table *t = g_table;
  for (size_t i = 0; t && i <= t->mask; ++i)
    if (t->entries[i].key) fn(t->entries[i].key, t->entries[i].rec, ctx);
}

void mc_hmap_fork_child(void) { __atomic_store_n(&g_table, NULL, __ATOMIC_RELEASE); }
