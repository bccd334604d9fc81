/* handle_set.h - the set of handles this library made, for validating handles callers pass in.
 *
 * Insert-only open-addressing set of pointers. contains() takes no lock: it reads the current
 * table with acquire loads. insert() takes the set's mutex; when the table grows, the new table is
 * published with a release store and the old one is kept (never freed), so a concurrent reader
 * always probes valid memory. Memory is bounded by twice the final table size.
 */
#ifndef MGPU_CACHED_HANDLE_SET_H
#define MGPU_CACHED_HANDLE_SET_H

#include <pthread.h>
#include <stddef.h>

typedef struct mc_handle_table mc_handle_table;

typedef struct mc_handle_set {
  pthread_mutex_t lock;   /* serialises insert() */
  mc_handle_table *table; /* current table; replaced under lock, read with acquire */
  size_t count;           /* entries; under lock */
} mc_handle_set;

#define MC_HANDLE_SET_INIT {PTHREAD_MUTEX_INITIALIZER, NULL, 0}

/* 1 if p was inserted, else 0. Lock-free. */
int mc_handle_set_contains(const mc_handle_set *set, const void *p);

/* Insert p (non-null). Returns 0, or -1 if memory ran out. */
int mc_handle_set_insert(mc_handle_set *set, const void *p);

#endif
