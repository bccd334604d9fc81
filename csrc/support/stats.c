/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* stats.c - statistics counters, their exported mgpu_cached_stats_* interface (with
 * mgpu_cached_version and _enabled), and the at-exit report.
 *
 * The at-exit report (MGPU_CACHED_STATS, MGPU_CACHED_STATS_FILE) runs from a library destructor and
 * makes no driver call, so it is safe however late it runs. A statistics file that cannot be written
 * is reported (one line) and the counters go to stderr instead. In a child made by fork, the file
 * counts what happened after the fork ("since_fork": true); the stderr report stays absolute.
 */
#include "support/stats.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/config.h"
#include "support/thread_exit.h"
#include "include/mgpu_cached.h"

#define MC_EXPORT __attribute__((visibility("default")))
#ifndef MGPU_CACHED_VERSION
#define MGPU_CACHED_VERSION "0.1.0"
#endif

void (*mc_stats_observer)(int id); /* written once at library load (trace.c) */
static const char *(*g_backend_name)(void); /* written once at library load (abi/hooks.c) */

void mc_stats_set_backend_name(const char *(*name)(void)) { g_backend_name = name; }

static const char *backend_name(void) { return g_backend_name ? g_backend_name() : "none"; }

/* ---- per-thread counters (stats.h) ----
 * g_blocks: every block ever made (pushed with a compare-and-swap, never removed or freed).
 * A thread takes a free block over (owned 0 -> 1, compare-and-swap) or makes one at its first
 * count; its thread-exit hand-back (thread_exit.h) frees it (owned = 0, release) at thread exit. The block's values
 * stay: the next owner adds to them, every read sums them. A thread counting again after its
 * destructor ran (another destructor calling in) takes a block again, given back in the next
 * destructor round (a block is leaked only past glibc's last round, its counts still summed). */
uint64_t mc_stats_shared[MC_STAT_COUNT];
_Thread_local mc_stats_block *mc_stats_tl;
static mc_stats_block *g_blocks;   /* atomic head of the list */

static void block_exit(void *p) {
  mc_stats_block *b = p;
  if (mc_stats_tl == b) mc_stats_tl = NULL;
  __atomic_store_n(&b->owned, 0, __ATOMIC_RELEASE); /* its counts happen before the next owner's */
}

mc_stats_block *mc_stats_block_slow(void) {
  mc_stats_block *b = NULL;
  for (mc_stats_block *x = __atomic_load_n(&g_blocks, __ATOMIC_ACQUIRE); x && !b; x = x->next) {
    int free_ = 0;
    if (!__atomic_load_n(&x->owned, __ATOMIC_RELAXED) &&
        __atomic_compare_exchange_n(&x->owned, &free_, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
      b = x;
  }
  if (!b) {
    b = aligned_alloc(64, (sizeof *b + 63) & ~(size_t)63); /* a line of its own */
    if (!b) return NULL; /* this thread counts in the shared words */
    memset(b, 0, sizeof *b);
    b->owned = 1;
    mc_stats_block *head = __atomic_load_n(&g_blocks, __ATOMIC_RELAXED);
    do {
      b->next = head;
    } while (!__atomic_compare_exchange_n(&g_blocks, &head, b, 1, __ATOMIC_RELEASE,
                                          __ATOMIC_RELAXED));
  }
  /* Without the exit hook the block stays this thread's for good (still summed). */
  (void)mc_thread_exit_set(MC_EXIT_STATS, block_exit, b);
  mc_stats_tl = b;
  return b;
}

uint64_t mc_stat_get(mc_stat_id id) {
  uint64_t v = __atomic_load_n(&mc_stats_shared[id], __ATOMIC_RELAXED);
  if (mc_stat_is_gauge(id)) return v;
  for (mc_stats_block *b = __atomic_load_n(&g_blocks, __ATOMIC_ACQUIRE); b; b = b->next)
    v += __atomic_load_n(&b->v[id], __ATOMIC_RELAXED);
  return v;
}

int mc_stats_blocks(void) {
  int n = 0;
  for (mc_stats_block *b = __atomic_load_n(&g_blocks, __ATOMIC_ACQUIRE); b; b = b->next) ++n;
  return n;
}

void mc_stats_snapshot(uint64_t *values) {
  for (int i = 0; i < MC_STAT_COUNT; ++i) values[i] = mc_stat_get((mc_stat_id)i);
}

void mc_stat_set(mc_stat_id id, uint64_t value) {
  mc_stat_add(id, (int64_t)(value - mc_stat_get(id)));
}

static const char *const g_stat_names[] = {
#define MC_STATS_NAME(name, desc) #name,
    MC_STATS(MC_STATS_NAME)
#undef MC_STATS_NAME
};
static const char *const g_descriptions[] = {
#define MC_STATS_DESC(name, desc) desc,
    MC_STATS(MC_STATS_DESC)
#undef MC_STATS_DESC
};

MC_EXPORT const char *mgpu_cached_version(void) { return MGPU_CACHED_VERSION; }
MC_EXPORT int mgpu_cached_enabled(void) { return !mc_disabled(); }
MC_EXPORT int mgpu_cached_stats_count(void) { return MC_STAT_COUNT; }
MC_EXPORT const char *mgpu_cached_stats_name(int i) {
  return (i >= 0 && i < MC_STAT_COUNT) ? g_stat_names[i] : NULL;
}
MC_EXPORT const char *mgpu_cached_stats_description(int i) {
  return (i >= 0 && i < MC_STAT_COUNT) ? g_descriptions[i] : NULL;
}
MC_EXPORT int mgpu_cached_stats_read(uint64_t *values, int n) {
  if (!values || n <= 0) return 0;
  int count = n < MC_STAT_COUNT ? n : MC_STAT_COUNT;
  for (int i = 0; i < count; ++i) values[i] = mc_stat_get((mc_stat_id)i);
  return count;
}

/* The counters when this process was forked (zero in a process that was not): a child's statistics
 * file counts what the child did, so that summing the files of a process tree (`mgpu-cached stats`)
 * counts the parent's work once. Written by the child's only thread right after fork. */
static uint64_t g_fork_base[MC_STAT_COUNT];

void mc_stats_fork_child(void) {
  /* The parent's other threads are not in the child: their blocks are free to take over. */
  for (mc_stats_block *b = __atomic_load_n(&g_blocks, __ATOMIC_ACQUIRE); b; b = b->next)
    if (b != mc_stats_tl) __atomic_store_n(&b->owned, 0, __ATOMIC_RELEASE);
  mc_stats_snapshot(g_fork_base);
}

static void write_json(FILE *f) {
  uint64_t now[MC_STAT_COUNT];
  mc_stats_snapshot(now);
  int forked = 0;
  for (int i = 0; i < MC_STAT_COUNT; ++i) forked |= g_fork_base[i] != 0;
  fprintf(f, "{\"version\": \"%s\", \"enabled\": %s, \"backend\": \"%s\", \"pid\": %ld, "
          "\"since_fork\": %s, \"stats\": {", MGPU_CACHED_VERSION, mc_disabled() ? "false" : "true",
          backend_name(), (long)getpid(), forked ? "true" : "false");
  for (int i = 0; i < MC_STAT_COUNT; ++i) /* a gauge may have gone down since the fork */
    fprintf(f, "%s\"%s\": %lld", i ? ", " : "", g_stat_names[i],
            (long long)(now[i] - g_fork_base[i]));
  fprintf(f, "}}\n");
}

static void print_table(FILE *f) {
  uint64_t now[MC_STAT_COUNT];
  mc_stats_snapshot(now);
  fprintf(f, "mgpu-cached statistics (%s, backend %s):\n", mc_disabled() ? "disabled" : "enabled",
          backend_name());
  for (int i = 0; i < MC_STAT_COUNT; ++i)
    fprintf(f, "  %-22s %llu\n", g_stat_names[i],
            (unsigned long long)now[i]);
}

/* Open the statistics file named by MGPU_CACHED_STATS_FILE: "%p" becomes the process id, and then
 * the file is created anew (a second copy of the library in the same process, e.g. the stock-named
 * one beside a preloaded one, writes NAME.2, ...), so every process and copy has its own file. */
static FILE *open_stats_file(const char *pattern, char *path, size_t size) {
  size_t n = 0;
  int per_process = 0;
  for (const char *p = pattern; *p && n + 1 < size; ++p) {
    if (p[0] == '%' && p[1] == 'p') {
      n += (size_t)snprintf(path + n, size - n, "%ld", (long)getpid());
      if (n >= size) n = size - 1;
      per_process = 1;
      ++p;
    } else {
      path[n++] = *p;
    }
  }
  path[n] = '\0';
  if (!per_process) return fopen(path, "w");
  for (int copy = 1; copy < 100; ++copy) {
    char name[4096];
    if (copy == 1) snprintf(name, sizeof name, "%s", path);
    else snprintf(name, sizeof name, "%s.%d", path, copy);
    int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      snprintf(path, size, "%s", name);
      return fdopen(fd, "w");
    }
    if (errno != EEXIST) return NULL;
  }
  return NULL;
}

__attribute__((destructor)) static void mc_stats_at_exit(void) {
  const mc_config_t *cfg = mc_config();
  if (cfg->stats_at_exit) print_table(stderr);
  if (cfg->stats_file) {
    char path[4096];
    FILE *f = open_stats_file(cfg->stats_file, path, sizeof path);
    if (f) {
      write_json(f);
      fclose(f);
    } else {
      int err = errno;
      fprintf(stderr, "mgpu-cached: MGPU_CACHED_STATS_FILE='%s': cannot write '%s': %s; "
              "printing the statistics here instead\n", cfg->stats_file, path, strerror(err));
      if (!cfg->stats_at_exit) print_table(stderr);
    }
  }
}
