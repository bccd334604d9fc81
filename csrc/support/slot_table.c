/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* slot_table.c - generation-tagged handles over a never-shrinking slot table (see slot_table.h). */
#include "support/slot_table.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(void *) == 8, "handles are 64-bit values");

#define GEN_LIMIT 0xFFFFFFF0u /* a slot retired at this generation or above is never reused */

/* A chunk's slots (slot_table.h's Memory: mc_slot_chunk_of, mc_slot_chunk_base). */
static uint32_t chunk_slots(uint32_t c) { return c ? MC_SLOT_FIRST << (c - 1) : MC_SLOT_FIRST; }

static mc_slot_header *slot_of(const mc_slot_table *t, uint32_t index) {
  uint32_t c = mc_slot_chunk_of(index);
  return mc_slot_at(t, t->chunks[c], c, index);
}

void mc_slot_table_set_tag(mc_slot_table *t, uint8_t tag) { t->tag = tag; }

void mc_slot_table_set_payload(mc_slot_table *t, size_t payload) {
  t->payload = payload;
  t->stride = (sizeof(mc_slot_header) + payload + 7) & ~(size_t)7;
}

void *mc_slot_payload(const mc_slot_table *t, uint32_t index) { return slot_of(t, index) + 1; }

static uint64_t handle_of(const mc_slot_table *t, uint32_t gen, uint32_t index);

void *mc_slot_alloc(mc_slot_table *t, uint32_t *index, uint64_t *handle) {
  uint32_t i;
  if (t->free_head) {
    i = t->free_head - 1;
    t->free_head = slot_of(t, i)->next_free;
    if (!t->free_head) t->free_tail = 0;
  } else {
    if (t->nslots >= ((uint32_t)1 << MC_SLOT_INDEX_BITS)) return NULL;
    i = t->nslots;
    uint32_t c = mc_slot_chunk_of(i);
    if (!t->chunks[c]) {
      unsigned char *chunk = calloc(chunk_slots(c), t->stride);
      if (!chunk) return NULL;
      __atomic_store_n(&t->chunks[c], chunk, __ATOMIC_RELEASE);
    }
    t->nslots++;
  }
  mc_slot_header *s = slot_of(t, i);
  s->next_free = 0;
  /* The payload is written with atomic stores: a lock-free reader holding a stale handle may read
   * it concurrently (and then sees the generation moved on). */
  uint64_t *w = (uint64_t *)(s + 1);
  for (size_t k = 0; k < t->payload / 8; ++k) __atomic_store_n(&w[k], 0, __ATOMIC_RELEASE);
  *index = i;
  *handle = handle_of(t, s->gen + 1, i);
  return s + 1;
}

static uint64_t handle_of(const mc_slot_table *t, uint32_t gen, uint32_t index) {
  return (t->tag << 56) | ((uint64_t)gen << MC_SLOT_INDEX_BITS) | index;
}

uint64_t mc_slot_publish(mc_slot_table *t, uint32_t index) {
  mc_slot_header *s = slot_of(t, index);
  uint32_t gen = s->gen + 1; /* even (free) -> odd (live) */
  __atomic_store_n(&s->gen, gen, __ATOMIC_SEQ_CST);
  return handle_of(t, gen, index);
}

static void push_free(mc_slot_table *t, uint32_t index) {
  slot_of(t, index)->next_free = 0;
  if (t->free_tail) slot_of(t, t->free_tail - 1)->next_free = index + 1;
  else t->free_head = index + 1;
  t->free_tail = index + 1;
}

void mc_slot_unalloc(mc_slot_table *t, uint32_t index) { push_free(t, index); }

void mc_slot_retire(mc_slot_table *t, uint32_t index) {
  mc_slot_header *s = slot_of(t, index);
  uint32_t gen = s->gen + 1; /* odd (live) -> even (free) */
  __atomic_store_n(&s->gen, gen, __ATOMIC_SEQ_CST);
  if (gen < GEN_LIMIT) push_free(t, index);
}

void mc_slot_table_fork_child(mc_slot_table *t) {
  for (uint32_t i = 0; i < t->nslots; ++i)
    if (slot_of(t, i)->gen & 1) mc_slot_retire(t, i);
}
