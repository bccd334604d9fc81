/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* slot_table.h - generation-tagged handles: a handle names a slot of a table that never shrinks,
 * together with the slot's generation at the time the handle was made, so an object can be freed
 * while stale handles to it are still recognised (the slot outlives the object).
 *
 * A handle is a 64-bit value: tag (8 bits, one per table, so a handle of another table or a
 * pointer the library did not make is recognised), generation (32 bits) and slot index (24 bits).
 * A slot's generation is odd while the slot is live and even while it is free; every retirement and
 * every reuse adds one, so a handle is live only while its slot still has the generation it was
 * made with, stale once the slot moved on, and unknown if its generation was never issued. A slot
 * whose generation would wrap around is never reused, so a stale handle never becomes live again.
 *
 * Memory: slots live in chunks allocated on demand and never freed; chunk 0 holds the first
 * MC_SLOT_FIRST slots and chunk c >= 1 the next MC_SLOT_FIRST << (c - 1), so each chunk doubles the
 * table (a program with a few kernels and streams touches one small chunk: no page of zeroes made
 * at its first call, issue 21's first call). The table holds as many slots as were ever live at the
 * same time, and at most twice that in memory. Each slot is a header (generation, free-list link)
 * followed by the owner's payload, whose size the owner sets once.
 *
 * Locking: alloc, publish, retire and fork_child run under the owner's lock (the table has none of
 * its own). find and still take no lock: they read the chunk pointer and the slot's generation with
 * acquire loads. A payload field that lock-free readers read must be written with release stores
 * and read with acquire loads, and be re-checked against the generation after the read
 * (mc_slot_still): a store made after the slot was retired and reused is then seen to be so.
 */
#ifndef MGPU_CACHED_SLOT_TABLE_H
#define MGPU_CACHED_SLOT_TABLE_H

#include <stddef.h>
#include <stdint.h>

#define MC_SLOT_INDEX_BITS 24
#define MC_SLOT_FIRST_BITS 4
#define MC_SLOT_FIRST ((uint32_t)1 << MC_SLOT_FIRST_BITS)
#define MC_SLOT_MAX_CHUNKS (MC_SLOT_INDEX_BITS - MC_SLOT_FIRST_BITS + 1)

/* A table is a zero-initialised static (.bss, a few hundred bytes); its owner sets the tag at
 * library load, in a constructor (mc_slot_table_set_tag), before any call can make or look up a
 * handle, so lock-free readers see it without a test of their own. */
typedef struct mc_slot_table {
  uint64_t tag;                               /* top byte of this table's handles; set once at
                                                 load, immutable afterwards */
  size_t payload;                             /* payload bytes per slot; set once, owner's lock */
  size_t stride;                              /* header + payload, 8-aligned; set with payload */
  uint32_t nslots;                            /* slots created so far; owner's lock */
  uint32_t free_head, free_tail;              /* FIFO of free slots, index + 1 (0: none); owner's
                                                 lock */
  unsigned char *chunks[MC_SLOT_MAX_CHUNKS];  /* published with release, never freed */
} mc_slot_table;


typedef enum { MC_SLOT_LIVE = 0, MC_SLOT_STALE = 1, MC_SLOT_UNKNOWN = 2 } mc_slot_state;

/* Set the tag (non-zero; once, from the owner's constructor, before anything else). */
void mc_slot_table_set_tag(mc_slot_table *t, uint8_t tag);

/* Set the payload size (once, before the first alloc). Owner's lock. */
void mc_slot_table_set_payload(mc_slot_table *t, size_t payload);

/* A free slot (not live: no handle finds it), its payload zeroed; NULL if memory ran out or the
 * table is full. *handle is the handle it will have once published. The owner fills the payload,
 * then publishes or gives it back. Owner's lock. */
void *mc_slot_alloc(mc_slot_table *t, uint32_t *index, uint64_t *handle);

/* Make an allocated slot live; returns its handle (never 0), the one alloc announced. Owner's lock. */
uint64_t mc_slot_publish(mc_slot_table *t, uint32_t index);

/* Give back an allocated slot that was never published. Owner's lock. */
void mc_slot_unalloc(mc_slot_table *t, uint32_t index);

/* Retire a live slot: its handles become stale; the slot is reused later. Owner's lock. */
void mc_slot_retire(mc_slot_table *t, uint32_t index);

/* The slot index and the generation handle h names (its parts; nothing checked). */
static inline uint32_t mc_slot_index(uint64_t h) {
  return (uint32_t)(h & (((uint64_t)1 << MC_SLOT_INDEX_BITS) - 1));
}
static inline uint32_t mc_slot_gen(uint64_t h) { return (uint32_t)(h >> MC_SLOT_INDEX_BITS); }

/* A slot: this header, then the owner's payload (stride bytes in all). Here, not in
 * slot_table.c, because the launch path finds a function's slot at every launch (inline). */
typedef struct mc_slot_header {
  uint32_t gen;       /* odd: live; atomic (release stores, acquire loads) */
  uint32_t next_free; /* free-list link, index + 1 (0: end); owner's lock */
} mc_slot_header;

/* The chunk holding slot `index`, and the index of that chunk's first slot (see Memory above). */
static inline uint32_t mc_slot_chunk_of(uint32_t index) {
  if (index < MC_SLOT_FIRST) return 0;
  return (uint32_t)(31 - __builtin_clz(index)) - MC_SLOT_FIRST_BITS + 1;
}
static inline uint32_t mc_slot_chunk_base(uint32_t c) { return c ? MC_SLOT_FIRST << (c - 1) : 0; }

/* Slot `index`'s header in `chunk`, chunk number c of table t. */
static inline mc_slot_header *mc_slot_at(const mc_slot_table *t, unsigned char *chunk, uint32_t c,
                                         uint32_t index) {
  return (mc_slot_header *)(chunk + (size_t)(index - mc_slot_chunk_base(c)) * t->stride);
}

/* The payload of handle h's slot (if live) and whether h is live, stale or unknown.
 * Lock-free; never reads memory the table did not allocate. */
static inline mc_slot_state mc_slot_find(const mc_slot_table *t, uint64_t h, void **payload) {
  if ((h >> 56) != t->tag) return MC_SLOT_UNKNOWN;
  uint32_t i = mc_slot_index(h), gen = mc_slot_gen(h);
  if (!(gen & 1)) return MC_SLOT_UNKNOWN; /* never issued: handles carry odd generations */
  uint32_t c = mc_slot_chunk_of(i);
  unsigned char *chunk = __atomic_load_n(&t->chunks[c], __ATOMIC_ACQUIRE);
  if (!chunk) return MC_SLOT_UNKNOWN;
  mc_slot_header *s = mc_slot_at(t, chunk, c, i);
  uint32_t now = __atomic_load_n(&s->gen, __ATOMIC_SEQ_CST);
  if (now == gen) {
    if (payload) *payload = s + 1;
    return MC_SLOT_LIVE;
  }
  return gen < now ? MC_SLOT_STALE : MC_SLOT_UNKNOWN;
}

/* Whether handle h is still live (after reading its payload lock-free). */
static inline int mc_slot_still(const mc_slot_table *t, uint64_t h) {
  return mc_slot_find(t, h, NULL) == MC_SLOT_LIVE;
}

/* The same for a payload mc_slot_find gave for h: its slot's generation read again, without
 * finding the slot (a slot never moves and its chunk is never freed). */
static inline int mc_slot_payload_still(const void *payload, uint64_t h) {
  const mc_slot_header *s = (const mc_slot_header *)payload - 1;
  return __atomic_load_n(&s->gen, __ATOMIC_SEQ_CST) == mc_slot_gen(h);
}

/* The payload of slot `index` (allocated). */
void *mc_slot_payload(const mc_slot_table *t, uint32_t index);

/* In a forked child: retire every live slot (the parent's handles read as stale there). */
void mc_slot_table_fork_child(mc_slot_table *t);

#endif
