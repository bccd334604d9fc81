/* handle_set.c - insert-only, lock-free-read pointer set (see handle_set.h). */
#include "handle_set.h"

#include <stdint.h>
#include <stdlib.h>

struct mc_handle_table {
  size_t mask;         /* capacity - 1, capacity a power of two */
  const void *slot[];  /* NULL = empty; written once each, under the set's lock */
};

static size_t hash_ptr(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (size_t)x;
}

int mc_handle_set_contains(const mc_handle_set *set, const void *p) {
  if (!p) return 0;
  const mc_handle_table *t = __atomic_load_n(&set->table, __ATOMIC_ACQUIRE);
  if (!t) return 0;
  for (size_t i = hash_ptr(p) & t->mask;; i = (i + 1) & t->mask) {
    const void *s = __atomic_load_n(&t->slot[i], __ATOMIC_ACQUIRE);
    if (s == p) return 1;
    if (!s) return 0;
  }
}

/* Returns 1 if p was added, 0 if it was there already. */
static int put(mc_handle_table *t, const void *p) {
  size_t i = hash_ptr(p) & t->mask;
  while (t->slot[i]) {
    if (t->slot[i] == p) return 0;
    i = (i + 1) & t->mask;
  }
  __atomic_store_n(&t->slot[i], p, __ATOMIC_RELEASE);
  return 1;
}

int mc_handle_set_insert(mc_handle_set *set, const void *p) {
  if (!p) return -1;
  pthread_mutex_lock(&set->lock);
  mc_handle_table *t = set->table;
  size_t cap = t ? t->mask + 1 : 0;
  if ((set->count + 1) * 2 > cap) { /* keep the load factor at most 1/2 */
    size_t ncap = cap ? cap * 2 : 64;
    mc_handle_table *n = calloc(1, sizeof *n + ncap * sizeof(void *));
    if (!n) {
      pthread_mutex_unlock(&set->lock);
      return -1;
    }
    n->mask = ncap - 1;
    for (size_t i = 0; i < cap; ++i)
      if (t->slot[i]) put(n, t->slot[i]);
    __atomic_store_n(&set->table, n, __ATOMIC_RELEASE); /* old table stays valid for readers */
    t = n;
  }
  set->count += (size_t)put(t, p);
  pthread_mutex_unlock(&set->lock);
  return 0;
}
