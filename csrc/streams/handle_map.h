/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* handle_map.h - which driver streams and events this library made: a map from a driver object's
 * pointer to the library's record of it (pool.c), for the default handle model in which
 * mgpuStreamCreate / mgpuEventCreate return driver objects (pool.h).
 *
 * Insert-only: the library never destroys a driver object it made (pool.c keeps them pooled), so
 * an entry, once in, stays right for the life of the process (or until fork, in the child).
 *
 * Locking: mc_hmap_insert and mc_hmap_fork_child run under the caller's lock (pool.c's g_pool.lock);
 * mc_hmap_find takes no lock: open addressing over a table whose entries are written once (record,
 * then key, with release stores) and read with acquire loads; a full table is copied into one
 * twice its size, published with a release store; the old table is never freed (a reader may
 * still be in it; every table together holds less than twice the live one).
 */
#ifndef MGPU_CACHED_HANDLE_MAP_H
#define MGPU_CACHED_HANDLE_MAP_H

/* The record inserted for `key`, or NULL (never inserted, or key NULL). Lock-free. */
void *mc_hmap_find(const void *key);

/* Insert key -> rec (key not yet present, both non-NULL): 0, or -1 if memory ran out. Caller's lock. */
int mc_hmap_insert(const void *key, void *rec);

/* Call fn(key, rec, ctx) for every entry. Caller's lock (the one inserts run under). */
void mc_hmap_for_each(void (*fn)(const void *key, void *rec, void *ctx), void *ctx);

/* In a forked child: forget every entry (the tables are leaked, no driver call). Caller's lock. */
void mc_hmap_fork_child(void);

#endif
