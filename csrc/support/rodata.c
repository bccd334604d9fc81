/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* rodata.c - read-only segments of loaded objects and the generation of the set of loaded objects,
 * from dl_iterate_phdr (see rodata.h).
 *
 * glibc's dl_iterate_phdr holds the loader's list lock (dl_load_write_lock) around the walk and its
 * callbacks; dlopen takes it to link a new object (after mapping it) and dlclose to unmap and
 * unlink one, so what a callback sees (an object listed, its segments, the counters) is one
 * consistent state. The counters are reported with every object, so stopping at the first one gives
 * them at the cost of the lock and one callback.
 *
 * fork: glibc's fork resets the loader's dl_load_lock in the child but not dl_load_write_lock, so a
 * fork while another thread is inside dl_iterate_phdr leaves the child with that lock held by a
 * thread it does not have: its first dl_iterate_phdr, dlopen or dlclose hangs (measured on glibc
 * 2.36: 99 of 200 children of a process with a thread calling dl_iterate_phdr in a loop). Hits call
 * it all the time, so the fork handlers wait until no thread is inside it through this file, and
 * hold new calls off until the fork is done. Without a lock on the way in: a thread counts itself
 * in one of MC_SHARDS counters (by its thread id, each counter on its own cache line, so threads
 * rarely share one), then reads g_forking; the fork's prepare step sets g_forking, then waits for
 * every counter to read zero. Both sides write, then read the other's word (sequentially
 * consistent), so either the thread sees g_forking and backs out, or the prepare step sees it
 * counted and waits for it. A thread that backs out waits on g_fork_mutex, which the forking
 * thread holds from prepare until parent (or child) and which nothing else takes meanwhile.
 */
#include "support/rodata.h"

#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>

#define MC_SHARDS 16

static struct {
  unsigned long n; /* threads of this shard inside dl_iterate_phdr; atomic */
  char pad[64 - sizeof(unsigned long)];
} g_inside[MC_SHARDS] __attribute__((aligned(64)));
static int g_forking; /* a fork is being prepared; atomic, written by the forking thread only */
static pthread_mutex_t g_fork_mutex = PTHREAD_MUTEX_INITIALIZER; /* held by the forking thread */

static unsigned long *my_shard(void) {
  uint64_t x = (uint64_t)(uintptr_t)pthread_self() * 0x9E3779B97F4A7C15ULL;
  return &g_inside[x >> 60].n; /* MC_SHARDS == 16: the top 4 bits */
}

/* dl_iterate_phdr, never while a fork is under way. */
static void iterate(int (*callback)(struct dl_phdr_info *, size_t, void *), void *data) {
  unsigned long *shard = my_shard();
  for (;;) {
    __atomic_add_fetch(shard, 1, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&g_forking, __ATOMIC_SEQ_CST)) break;
    __atomic_sub_fetch(shard, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&g_fork_mutex); /* until the fork is done */
    pthread_mutex_unlock(&g_fork_mutex);
  }
  dl_iterate_phdr(callback, data);
  __atomic_sub_fetch(shard, 1, __ATOMIC_RELEASE);
}

void mc_rodata_fork_prepare(void) {
  pthread_mutex_lock(&g_fork_mutex);
  __atomic_store_n(&g_forking, 1, __ATOMIC_SEQ_CST);
  for (int i = 0; i < MC_SHARDS; ++i)
    while (__atomic_load_n(&g_inside[i].n, __ATOMIC_SEQ_CST)) sched_yield();
}

void mc_rodata_fork_parent(void) {
  __atomic_store_n(&g_forking, 0, __ATOMIC_SEQ_CST);
  pthread_mutex_unlock(&g_fork_mutex);
}

void mc_rodata_fork_child(void) {
  /* The only thread: nobody is inside; the mutex, taken by this thread as another id, is new. */
  for (int i = 0; i < MC_SHARDS; ++i) g_inside[i].n = 0;
  __atomic_store_n(&g_forking, 0, __ATOMIC_SEQ_CST);
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  memcpy(&g_fork_mutex, &fresh, sizeof fresh);
}

/* The counters are present where the loader passes a structure that reaches them (glibc >= 2.4,
 * musl, which never unloads: subs 0). */
#define HAS_COUNTERS(size) \
  ((size) >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(((struct dl_phdr_info *)0)->dlpi_subs))

static uint64_t generation_of(const struct dl_phdr_info *info, size_t size) {
  if (!HAS_COUNTERS(size)) return 0;
  /* Only unloads can take a loaded object's bytes away (a load maps a new object into free
   * address space): the count of unloads, which only grows, plus one (never 0). */
  return (uint64_t)info->dlpi_subs + 1;
}

static int first_object(struct dl_phdr_info *info, size_t size, void *data) {
  *(uint64_t *)data = generation_of(info, size);
  return 1; /* stop: the counters are global, the other objects add nothing */
}

uint64_t mc_rodata_generation(void) {
  uint64_t g = 0;
  iterate(first_object, &g);
  return g;
}

typedef struct {
  uintptr_t start, end; /* the range looked for */
  uint64_t generation;  /* out: nonzero once found */
  uintptr_t seg_end;    /* out: the end of the segment's file bytes holding it */
  char *name;           /* out: the object's name (may be NULL) */
  size_t name_size;
  int seen;             /* objects walked so far */
  int in_main;          /* out: found in the first object, the executable */
} find_args;

static int find_object(struct dl_phdr_info *info, size_t size, void *data) {
  find_args *a = data;
  int first = a->seen++ == 0; /* the loader lists the executable first */
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W)) continue;
    uintptr_t seg = (uintptr_t)info->dlpi_addr + (uintptr_t)ph->p_vaddr;
    uintptr_t seg_end = seg + (uintptr_t)ph->p_filesz; /* the file's bytes, not zero fill */
    if (seg_end < seg || a->start < seg || a->end > seg_end) continue;
    a->generation = generation_of(info, size);
    a->seg_end = seg_end;
    a->in_main = first && (!info->dlpi_name || !info->dlpi_name[0]);
    if (a->name && a->name_size) {
      const char *n = info->dlpi_name ? info->dlpi_name : "";
      strncpy(a->name, n, a->name_size - 1);
      a->name[a->name_size - 1] = 0;
    }
    return 1;
  }
  return 0;
}

uint64_t mc_rodata_lookup(const void *p, size_t *avail, char *name, size_t name_size,
                          int *in_main) {
  uintptr_t start = (uintptr_t)p;
  *avail = 0;
  if (name && name_size) name[0] = 0;
  if (in_main) *in_main = 0;
  if (!p || start + 1 < start) return 0;
  find_args a = {start, start + 1, 0, 0, name, name_size, 0, 0};
  iterate(find_object, &a);
  if (a.generation) *avail = (size_t)(a.seg_end - start);
  if (in_main) *in_main = a.generation && a.in_main;
  return a.generation;
}

uint64_t mc_rodata_find(const void *p, size_t len, char *name, size_t name_size) {
  size_t avail = 0; /* segments do not overlap: the one holding p holds all len bytes or none */
  uint64_t g = mc_rodata_lookup(p, &avail, name, name_size, NULL);
  return len && avail >= len ? g : 0;
}
